"""IK tick cost: our full tick side by side with a bare mink loop.

Both run the same QP (frame tasks, posture, configuration/velocity/collision
limits, frozen non-arm joints, DAQP) on the same target sequence — a smooth
random walk of both grips around the home pose, new targets every tick. "ours" is
``BimanualIk.tick`` (QP, integrate, joint-reference guard, collision guard,
backtracking, commit); "ours QP" is only our solve + integrate
(mink's assembly, DAQP called directly), "bare mink" is ``mink.solve_ik`` +
``integrate_inplace``.
Blocks of ticks alternate between the two so machine load hits both alike,
and each tick is timed in thread CPU time (what the tick itself costs, not
time spent descheduled on a busy machine) next to wall time. Prints median
and p99 per tick (ms) and our overhead as a ratio.

    python benchmarks/ik_tick.py [--ticks 4000] [--block 200] [--no-collisions]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import mink
import numpy as np

from teledora import models
from teledora.operators.geometry import Pose
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_tasks import pose_to_se3
from teledora.operators.model.sides import SIDES
from teledora.models.config_files import load_ik_config


def make(collisions: bool) -> BimanualIk:
    config = load_ik_config()
    settings = replace(config.settings, collision=replace(config.collision, enabled=collisions))
    return BimanualIk(build_ik_model(models.path(settings.solver.model), True), models.load_profile(), settings)


def target_walk(ik: BimanualIk, n: int, seed: int = 0) -> list[dict[str, Pose]]:
    """Hand-like targets: each grip's velocity does a random walk (≤ 0.3 m/s),
    its position stays within ±6 cm of home; orientation is kept."""
    rng = np.random.default_rng(seed)
    home = {s: ik.grip_pose(s) for s in SIDES}
    offset = {s: np.zeros(3) for s in SIDES}
    velocity = {s: np.zeros(3) for s in SIDES}
    out = []
    for _ in range(n):
        step = {}
        for s in SIDES:
            velocity[s] = np.clip(0.98 * velocity[s] + rng.normal(0, 0.02, 3), -0.3, 0.3)
            offset[s] = offset[s] + velocity[s] * ik.dt
            bounce = np.abs(offset[s]) > 0.06
            velocity[s][bounce] *= -1
            offset[s] = np.clip(offset[s], -0.06, 0.06)
            step[s] = Pose.of(home[s].position + offset[s], home[s].orientation)
        out.append(step)
    return out


class BareMink:
    """The same QP assembled straight from mink, integrated in place."""

    def __init__(self, ik: BimanualIk) -> None:
        self.ik = ik
        self.cfg = ik.configuration
        self.freeze = ik._freezer((True, True))

    def tick(self, targets: dict[str, Pose]) -> None:
        ik = self.ik
        tasks = [ik.posture_task]
        for s in SIDES:
            ik.frame_tasks[s].set_target(pose_to_se3(targets[s]))
            tasks.append(ik.frame_tasks[s])
        v = mink.solve_ik(self.cfg, tasks, ik.dt, ik.settings.solver.qp_solver, damping=ik.settings.solver.regularization,
                          limits=ik.limits, constraints=[self.freeze])
        self.cfg.integrate_inplace(v, ik.dt)


class OurSolveIntegrate:
    """Our QP path only (mink assembly + direct DAQP call) and the integration,
    without the reference guard, collision guard and backtracking."""

    def __init__(self, ik: BimanualIk) -> None:
        self.ik = ik

    def tick(self, targets: dict[str, Pose]) -> None:
        ik = self.ik
        v = ik._solve(ik._set_targets(targets), (True, True))
        ik.configuration.integrate_inplace(v, ik.dt)


def measure(ticks: int, block: int, collisions: bool) -> dict[str, np.ndarray]:
    ours, bare_ik, qp_ik = make(collisions), make(collisions), make(collisions)
    bare, qp_only = BareMink(bare_ik), OurSolveIntegrate(qp_ik)
    walk = target_walk(ours, ticks)
    variants = (("ours", ours.tick), ("ours QP", qp_only.tick), ("bare mink", bare.tick))
    times: dict[str, list[float]] = {name: [] for name, _ in variants}
    wall: dict[str, list[float]] = {name: [] for name, _ in variants}
    for _ in range(50):  # warm-up
        for _, fn in variants:
            fn(walk[0])
    for start in range(0, ticks, block):
        for name, fn in variants:
            for targets in walk[start:start + block]:
                w0, c0 = time.perf_counter(), time.thread_time()
                fn(targets)
                times[name].append(time.thread_time() - c0)
                wall[name].append(time.perf_counter() - w0)
    return {k: np.array(v) * 1e3 for k, v in times.items()}, {k: np.array(v) * 1e3 for k, v in wall.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=4000)
    ap.add_argument("--block", type=int, default=200)
    ap.add_argument("--no-collisions", action="store_true")
    args = ap.parse_args()
    res, wall = measure(args.ticks, args.block, not args.no_collisions)
    print(f"IK tick, AlohaMini2, collisions {'off' if args.no_collisions else 'on'}, {args.ticks} ticks each")
    print(f"{'':<10} {'cpu median ms':>14} {'cpu p99 ms':>10} {'wall median ms':>15} {'wall p99 ms':>11}")
    for name, t in res.items():
        w = wall[name]
        print(f"{name:<10} {np.median(t):14.3f} {np.percentile(t, 99):10.3f} {np.median(w):15.3f} {np.percentile(w, 99):11.3f}")
    b = res["bare mink"]
    for name in ("ours", "ours QP"):
        o = res[name]
        print(f"ratio {name}/bare (cpu): median {np.median(o) / np.median(b):.2f}x, "
              f"p99 {np.percentile(o, 99) / np.percentile(b, 99):.2f}x")


if __name__ == "__main__":
    main()
