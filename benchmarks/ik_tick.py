"""IK tick cost: our full tick side by side with a bare mink + DAQP solve of the
same tasks, and our tick term by term.

All variants solve the same tasks (both grip frame tasks, the posture task,
frozen non-arm joints) with the same limits (joint range, speed caps, and
collision rows on the same geom pairs — every pair the model's collision
filter allows that an arm joint moves) on the same target sequence: a smooth
random walk of both grips (<= 0.3 m/s, +-6 cm) around an unfolded working
posture (``--center home``: around the folded home posture), new targets
every tick.

* "ours": ``BimanualIk.tick`` — QP, integrate, joint-reference guard, exact
  collision guard, backtracking, commit, global fallback bookkeeping.
* "ours QP": our solve (mink assembly with our clearance rows, DAQP called
  directly) + integrate only.
* "ours 10 ms" (``--compare-path-check``): our tick with a plan's path checked
  at every control period only, as before the check between those points
  (``path_subdivisions = 1``, distances measured up to 1 µm above the guard).
* "ours, no bounds" (``--compare-bounds``): our tick without the distance
  bounds (``operators/ik/distance_bounds.py``): the broadphase and exact
  distances on every pair at every check, as before them (the same outputs).
* "ours, uniform guard" (``--compare-guard``): our tick with the collision
  guard shortening both arms' steps by one fraction, as before each arm was
  shortened on its own (``BimanualIk._guard_each_arm``).
* "ours, loose caps" (``--compare-caps``): our tick with the joint
  reference's acceleration and jerk caps raised 100 and 10,000 times (speed cap
  kept), to tell how much of the tracking error the reference's caps cause
  (a diagnosis: the shipped caps are not changed).
* "bare mink": ``mink.solve_ik`` (DAQP) with mink's stock
  ``CollisionAvoidanceLimit`` on the same pairs + ``integrate_inplace``.

Blocks of ticks alternate between the variants so machine load hits all
alike; each tick is timed in thread CPU time. Prints median and p99 per tick,
the ratios to bare mink, our tick's cost by phase (mean per tick), and per
variant the tracking error: each grip's distance from its target after every
tick (both arms, every tick of the walk; measured outside the timing).

    python benchmarks/ik_tick.py [--ticks 4000] [--block 200] [--no-collisions] [--center ready|home] [--far] [--compare-path-check] [--compare-bounds] [--compare-guard] [--compare-caps]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import mink
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ik_node_driver import ik_config  # noqa: E402

from teledora import models  # noqa: E402
from teledora.operators.geometry import Pose  # noqa: E402
from teledora.operators.ik.ik_config import IkConfig  # noqa: E402
from teledora.operators.ik.ik_model import build_ik_model  # noqa: E402
from teledora.operators.ik.ik_solver import BimanualIk  # noqa: E402
from teledora.operators.ik.ik_tasks import pose_to_se3  # noqa: E402
from teledora.operators.model.sides import SIDES  # noqa: E402


# an unfolded working posture; at the folded home posture the arms' own links
# block most small moves (the walk then presses them against their mounts and
# the global fallback keeps searching)
READY = {"shoulder_pan": 0.0, "shoulder_lift": -0.6, "elbow_flex": 0.3, "wrist_flex": 0.6, "wrist_yaw_joint": 0.0,
         "wrist_roll": 0.0}


def make(collisions: bool, center: str = "ready", **overrides) -> BimanualIk:
    settings = IkConfig.from_mapping(ik_config(collision__enabled=collisions, **overrides)).settings
    ik = BimanualIk(build_ik_model(models.path(settings.solver.model), True), models.load_profile(), settings)
    if center == "ready":
        ik.reset(np.array([READY[n.split("_", 1)[1]] for n in ik.arm_joint_names]))
        ik.posture_task.set_target(ik.configuration.q)
    return ik


def target_walk(ik: BimanualIk, n: int, seed: int = 0) -> list[dict[str, Pose]]:
    """Hand-like targets: each grip's velocity does a random walk (<= 0.3 m/s),
    its position stays within +-6 cm of where it starts; orientation is kept."""
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


def far_targets(ik: BimanualIk, n: int, seed: int = 0, hold: int = 300) -> list[dict[str, Pose]]:
    """Far targets: the grips of uniformly drawn collision-free arm
    configurations, each held for ``hold`` ticks (the global fallback searches)."""
    rng = np.random.default_rng(seed)
    q0 = ik.arm_q()
    lo, hi = ik.reference.lower_inner, ik.reference.upper_inner
    out: list[dict[str, Pose]] = []
    while len(out) < n:
        ik.reset(rng.uniform(lo, hi))
        if ik.min_proxy_distance(distmax=0.02) < 0.02:
            continue
        out += [{s: ik.grip_pose(s) for s in SIDES}] * hold
    ik.reset(q0)
    return out[:n]


class BareMink:
    """The same tasks and limits assembled and solved by mink, integrated in place."""

    def __init__(self, ik: BimanualIk) -> None:
        self.ik = ik
        self.cfg = ik.configuration
        self.freeze = ik._freezer((True, True))
        self.limits = [lim for lim in ik.limits if not hasattr(lim, "pairs")]
        if ik.collision_pairs is not None:
            c = ik.settings.collision
            self.limits.append(mink.CollisionAvoidanceLimit(
                ik.model, [([a], [b]) for a, b in ik.collision_pairs.id_pairs], gain=c.gain,
                minimum_distance_from_collisions=c.minimum_distance_m,
                collision_detection_distance=c.detection_distance_m))

    def tick(self, targets: dict[str, Pose]) -> None:
        ik = self.ik
        tasks = [ik.posture_task]
        for s in SIDES:
            ik.frame_tasks[s].set_target(pose_to_se3(targets[s]))
            tasks.append(ik.frame_tasks[s])
        v = mink.solve_ik(self.cfg, tasks, ik.dt, "daqp", damping=ik.settings.solver.regularization,
                          limits=self.limits, constraints=[self.freeze])
        self.cfg.integrate_inplace(v, ik.dt)


class OurSolveIntegrate:
    """Our QP path only (mink assembly + direct DAQP call) and the integration."""

    def __init__(self, ik: BimanualIk) -> None:
        self.ik = ik

    def tick(self, targets: dict[str, Pose]) -> None:
        ik = self.ik
        v = ik._solve(ik._set_targets(targets), (True, True))
        ik.configuration.integrate_inplace(v, ik.dt)


def measure(ticks: int, block: int, collisions: bool, center: str = "ready", far: bool = False,
            compare_path_check: bool = False, compare_bounds: bool = False, compare_guard: bool = False,
            compare_caps: bool = False):
    ours, bare_ik, qp_ik = make(collisions, center), make(collisions, center), make(collisions, center)
    bare, qp_only = BareMink(bare_ik), OurSolveIntegrate(qp_ik)
    walk = far_targets(ours, ticks) if far else target_walk(ours, ticks)
    variants = [("ours", ours.tick), ("ours QP", qp_only.tick), ("bare mink", bare.tick)]
    solver_of = {"ours": ours, "ours QP": qp_ik, "bare mink": bare_ik}
    if compare_caps:
        r = ours.settings.joint_reference
        loose = make(collisions, center, joint_reference__max_accel_rad_s2=100 * r.max_accel_rad_s2,
                     joint_reference__max_jerk_rad_s3=10_000 * r.max_jerk_rad_s3)
        variants.insert(1, ("ours, loose caps", loose.tick))
        solver_of["ours, loose caps"] = loose
    if compare_path_check:
        coarse = make(collisions, center)
        coarse.path_subdivisions = 1
        if coarse.collision_pairs is not None:
            coarse.guard.band = 1e-6
        variants.insert(1, ("ours 10 ms", coarse.tick))
    if compare_bounds and ours.collision_pairs is not None:
        unbounded = make(collisions, center)
        unbounded.guard.bounds = None
        unbounded.collision_limit.bounds = None
        variants.insert(1, ("ours, no bounds", unbounded.tick))
    if compare_guard:
        uniform = make(collisions, center)
        uniform._guard_each_arm = uniform._guard
        variants.insert(1, ("ours, uniform guard", uniform.tick))
    times: dict[str, list[float]] = {name: [] for name, _ in variants}
    wall: dict[str, list[float]] = {name: [] for name, _ in variants}
    error: dict[str, list[float]] = {name: [] for name in solver_of}
    for _ in range(50):  # warm-up
        for _, fn in variants:
            fn(walk[0])
    timed = [ours] + ([coarse] if compare_path_check else []) + ([unbounded] if compare_bounds else []) + (
        [uniform] if compare_guard else [])
    for ik in timed:
        ik.phase_clock = time.thread_time
        ik.phase_times = {}
    for start in range(0, ticks, block):
        for name, fn in variants:
            for targets in walk[start:start + block]:
                w0, c0 = time.perf_counter(), time.thread_time()
                fn(targets)
                times[name].append(time.thread_time() - c0)
                wall[name].append(time.perf_counter() - w0)
                if name in solver_of:
                    ik = solver_of[name]
                    error[name] += [float(np.linalg.norm(ik.grip_pose(s).position - targets[s].position))
                                    for s in SIDES]
    phases = {k: v / ticks * 1e3 for k, v in ours.phase_times.items()}
    if compare_path_check:
        key = "joint reference + path check"
        phases[f"{key} (10 ms)"] = coarse.phase_times.get(key, 0.0) / ticks * 1e3
    if compare_bounds:
        for key in ("QP (assembly + DAQP)", "collision guard", "joint reference + path check"):
            phases[f"{key} (no bounds)"] = unbounded.phase_times.get(key, 0.0) / ticks * 1e3
    if compare_guard:
        for key in ("collision guard", "joint reference + path check"):
            phases[f"{key} (uniform guard)"] = uniform.phase_times.get(key, 0.0) / ticks * 1e3
    stats = {"guard_shortened": ours.guard_shortened, "guard_per_arm": ours.guard_per_arm, "pairs": len(ours.collision_pairs or []),
             "searches": ours.fallback.searches_started if ours.fallback else 0}
    stats["tracking_mm"] = {k: np.array(v) * 1e3 for k, v in error.items()}
    return ({k: np.array(v) * 1e3 for k, v in times.items()}, {k: np.array(v) * 1e3 for k, v in wall.items()},
            phases, stats)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ticks", type=int, default=4000)
    ap.add_argument("--block", type=int, default=200)
    ap.add_argument("--no-collisions", action="store_true")
    ap.add_argument("--center", choices=("ready", "home"), default="ready",
                    help="posture the walk (and the posture task) is centred on")
    ap.add_argument("--far", action="store_true",
                    help="instead of the walk, far targets (uniform reachable poses, 3 s each): the fallback searches")
    ap.add_argument("--compare-bounds", action="store_true",
                    help="also our tick without the distance bounds (every pair measured at every check)")
    ap.add_argument("--compare-path-check", action="store_true",
                    help="also our tick with a plan's path checked every control period only")
    ap.add_argument("--compare-guard", action="store_true",
                    help="also our tick with the guard shortening both arms' steps by one fraction")
    ap.add_argument("--compare-caps", action="store_true",
                    help="also our tick with the reference's acceleration and jerk caps raised (tracking diagnosis)")
    args = ap.parse_args()
    res, wall, phases, stats = measure(args.ticks, args.block, not args.no_collisions, args.center, args.far,
                                       args.compare_path_check, args.compare_bounds, args.compare_guard,
                                       args.compare_caps)
    what = "far targets held 3 s" if args.far else f"walk around {args.center}"
    print(f"IK tick, AlohaMini2, collisions {'off' if args.no_collisions else 'on'} ({stats['pairs']} geom pairs), "
          f"{what}, {args.ticks} ticks each, {stats['searches']} global searches")
    print(f"{'':<15} {'cpu median ms':>14} {'cpu p99 ms':>10} {'wall median ms':>15} {'wall p99 ms':>11}")
    for name, t in res.items():
        w = wall[name]
        print(f"{name:<15} {np.median(t):14.3f} {np.percentile(t, 99):10.3f} {np.median(w):15.3f} {np.percentile(w, 99):11.3f}")
    b = res["bare mink"]
    for name in [n for n in ("ours", "ours, loose caps", "ours, uniform guard", "ours, no bounds", "ours 10 ms", "ours QP")
                 if n in res]:
        o = res[name]
        print(f"ratio {name}/bare (cpu): median {np.median(o) / np.median(b):.2f}x, "
              f"p99 {np.percentile(o, 99) / np.percentile(b, 99):.2f}x, mean {np.mean(o) / np.mean(b):.2f}x")
    if "ours, uniform guard" in res:
        o, u = res["ours"], res["ours, uniform guard"]
        print(f"ratio ours/ours with the uniform guard (cpu): median {np.median(o) / np.median(u):.2f}x, "
              f"p99 {np.percentile(o, 99) / np.percentile(u, 99):.2f}x, mean {np.mean(o) / np.mean(u):.2f}x")
    if "ours, no bounds" in res:
        o, u = res["ours"], res["ours, no bounds"]
        print(f"ratio ours/ours without bounds (cpu): median {np.median(o) / np.median(u):.2f}x, "
              f"p99 {np.percentile(o, 99) / np.percentile(u, 99):.2f}x, mean {np.mean(o) / np.mean(u):.2f}x")
    print("tracking error, grip to target after each tick (mm):")
    bare_err = stats["tracking_mm"]["bare mink"]
    for name, e in stats["tracking_mm"].items():
        # means compared: a slow stretch of the walk brings the median near zero
        print(f"  {name:<22} median {np.median(e):6.2f}  p95 {np.percentile(e, 95):6.2f}  mean {np.mean(e):6.2f}"
              f"  ({np.mean(e) / np.mean(bare_err):.2f}x bare mink's mean)")
    print("our tick by phase (cpu, mean per tick):")
    for name, ms in phases.items():
        print(f"  {name:<24} {ms:7.3f} ms  ({ms / np.mean(b):.2f}x of a bare mink tick)")
    total = sum(v for k, v in phases.items() if not k.endswith(("(10 ms)", "(no bounds)", "(uniform guard)")))
    print(f"  {'total':<24} {total:7.3f} ms; bare mink mean {np.mean(b):.3f} ms; "
          f"guard shortened {stats['guard_shortened']} steps, {stats['guard_per_arm']} of them per arm")


if __name__ == "__main__":
    main()
