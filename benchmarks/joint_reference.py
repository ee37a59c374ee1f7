"""Joint caps of the commanded reference: the jerk-limited reference side by
side with the uniform step scaling it replaced, on the same target streams.

Both run the full IK tick (QP, collision guard, backtracking) on the same
targets; only the joint reference differs. "scaling" is the former guard,
reproduced here: the QP step (one tick of the speed cap) is scaled
uniformly until no joint exceeds the speed cap and, where possible, the
acceleration cap; holds freeze the reference. "jerk-limited" is
``BimanualIk.tick`` as shipped.

Streams, 10 ms ticks:

- **teleop**: both grips follow a smooth random walk around home (≤ 0.3 m/s,
  the stream of ``benchmarks/ik_tick.py``), 3,000 ticks.
- **adversarial**: episodes of 300 ticks from home at a random lift height;
  every 10-60 ticks the targets jump anywhere within ±0.15 m of home (jumps
  up to 0.3 m, random orientation ±0.6 rad), jump back to the previous
  targets (reversal) or disappear for 5-20 ticks (hold); targets go straight
  to the IK, without the node's target speed limiter.

The caps are checked on what the arms receive: finite differences of the
published joint references at the tick times (speed: first differences,
acceleration: second, jerk: third). Printed per stream and reference: ticks
where any joint exceeds a cap (float tolerance 1e-6 relative), the largest
|v|, |a|, |j|, the median and p95 grip position error to the targets, and
the thread CPU time per tick.

    python benchmarks/joint_reference.py [--episodes 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from teledora import models
from teledora.models.config_files import load_ik_config
from teledora.operators.geometry import Pose, quat_multiply
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_settings import IkConfigError
from teledora.operators.ik.ik_solver import BimanualIk, IkSolveError, TickResult
from teledora.operators.ik.joint_reference import JointReferenceConfig
from teledora.operators.model.sides import SIDES

TOLERANCE = 1e-6
Targets = Mapping[str, Pose | None]


class UniformScalingReference:
    """The former joint reference guard: the displacement is scaled uniformly
    until no joint exceeds the speed cap and, where possible, the change of
    velocity stays within the acceleration cap; holds clear the velocity."""

    def __init__(self, lower: np.ndarray, upper: np.ndarray, caps: JointReferenceConfig) -> None:
        self.lower_inner = np.nextafter(lower, np.inf)
        self.upper_inner = np.nextafter(upper, -np.inf)
        self.max_speed = caps.max_speed_rad_s
        self.max_accel = caps.max_accel_rad_s2
        self.q = np.zeros(len(lower))
        self.dq = np.zeros(len(lower))

    def clamp(self, q: np.ndarray) -> np.ndarray:
        return np.clip(q, self.lower_inner, self.upper_inner)

    def reset(self, q: np.ndarray) -> None:
        self.q, self.dq = self.clamp(q), np.zeros(len(q))

    def propose(self, q_candidate: np.ndarray, dt: float) -> np.ndarray:
        velocity = (q_candidate - self.q) / dt
        with np.errstate(divide="ignore"):
            s = min(1.0, float(np.min(self.max_speed / np.abs(velocity))))
        s = self._acceleration_scale(velocity, self.dq, self.max_accel * dt, s)
        return self.clamp(self.q + s * (q_candidate - self.q))

    @staticmethod
    def _acceleration_scale(velocity: np.ndarray, previous: np.ndarray, dv_max: float, s_max: float) -> float:
        """Largest s in [0, s_max] with |s v - v_prev| <= dv_max per joint; when
        none exists, the s with the smallest worst violation."""
        still = velocity == 0.0
        with np.errstate(divide="ignore", invalid="ignore"):
            a = (previous - dv_max) / velocity
            b = (previous + dv_max) / velocity
        lo = float(np.max(np.where(still, -np.inf, np.minimum(a, b)), initial=0.0))
        hi = min(s_max, float(np.min(np.where(still, np.inf, np.maximum(a, b)))))
        if lo <= hi:
            return hi
        v, p = velocity[~still], previous[~still]
        lo_s, hi_s = 0.0, s_max
        for _ in range(2):
            grid = np.linspace(lo_s, hi_s, 101)
            k = int(np.argmin(np.max(np.abs(np.outer(grid, v) - p) - dv_max, axis=1)))
            step = (hi_s - lo_s) / 100.0
            lo_s, hi_s = max(0.0, grid[k] - step), min(s_max, grid[k] + step)
        return float(grid[k])

    def commit(self, q_new: np.ndarray, dt: float) -> None:
        q_new = self.clamp(q_new)
        self.dq = (q_new - self.q) / dt
        self.q = q_new

    def hold(self) -> None:
        self.dq[:] = 0.0


class ScalingIk(BimanualIk):
    """The IK tick as it was with the uniform-scaling reference: the QP step
    covers one tick, is scaled, then guarded and backtracked."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        lower = np.array([self.model.jnt_range[self._jid[n]][0] for n in self.arm_joint_names])
        upper = np.array([self.model.jnt_range[self._jid[n]][1] for n in self.arm_joint_names])
        self.scaling = UniformScalingReference(lower, upper, self.settings.joint_reference)
        self.scaling.reset(self.arm_q())

    def reset(self, arm_q, lift_joint: float | None = None) -> None:
        super().reset(arm_q, lift_joint)
        if hasattr(self, "scaling"):
            self.scaling.reset(self.arm_q())

    def tick(self, targets: Targets, dt: float | None = None) -> TickResult:
        dt = self.dt if dt is None else float(dt)
        if not dt > 0:
            raise IkConfigError(f"tick dt must be > 0, got {dt}")
        active = {side: targets.get(side) is not None for side in SIDES}
        q_prev = self.scaling.q.copy()
        if not any(active.values()):
            self.scaling.hold()
            return TickResult("hold", q_prev, self.scaling.dq.copy(), active)
        try:
            tasks = self._set_targets(targets)
            v = self._solve(tasks, (active["left"], active["right"]), dt)
            merit0 = sum(t.last_merit for t in tasks)
        except IkSolveError as exc:
            self.failures += 1
            self.scaling.hold()
            self._set_q(q_prev)
            return TickResult("failed", q_prev, self.scaling.dq.copy(), active, 0.0, float("nan"), str(exc))
        q_proposed = self.scaling.propose(self.configuration.integrate(v, dt)[self._qadr], dt)
        q_safe, fraction, dmin = self._guard(q_prev, q_proposed)
        q_safe = self._backtrack(q_prev, q_safe, tasks, merit0)
        self.scaling.commit(q_safe, dt)
        self._set_q(self.scaling.q)
        return TickResult("ok", self.scaling.q.copy(), self.scaling.dq.copy(), active, fraction, dmin)


def make(kind: str) -> BimanualIk:
    settings = load_ik_config().settings
    model = build_ik_model(models.path(settings.solver.model), settings.solver.add_floor)
    cls = ScalingIk if kind == "scaling" else BimanualIk
    return cls(model, models.load_profile(), settings)


def teleop_walk(ik: BimanualIk, n: int, seed: int) -> list[dict[str, Pose]]:
    """Each grip's velocity does a random walk (≤ 0.3 m/s) within ±6 cm of home."""
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


def _turned(pose: Pose, rng: np.random.Generator) -> Pose:
    axis = rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    angle = rng.uniform(-0.6, 0.6)
    dq = np.concatenate([axis * np.sin(angle / 2), [np.cos(angle / 2)]])
    return Pose.of(pose.position + rng.uniform(-0.15, 0.15, 3), quat_multiply(dq, pose.orientation))


def adversarial_stream(home: dict[str, Pose], n: int, rng: np.random.Generator) -> list[Targets]:
    """Jumps, reversals and holds (see the module docstring)."""
    out: list[Targets] = []
    current: Targets = {s: _turned(home[s], rng) for s in SIDES}
    previous = current
    while len(out) < n:
        kind = rng.choice(["jump", "reverse", "hold"], p=[0.6, 0.25, 0.15])
        if kind == "hold":
            out += [{}] * int(rng.integers(5, 21))
            continue
        if kind == "jump":
            previous, current = current, {s: _turned(home[s], rng) for s in SIDES}
        else:
            previous, current = current, previous
        out += [current] * int(rng.integers(10, 61))
    return out[:n]


@dataclass
class Figures:
    ticks: int
    over: dict[str, int]
    peak: dict[str, float]
    errors_m: np.ndarray
    cpu_ms: np.ndarray


def run_stream(ik: BimanualIk, streams: list[tuple[np.ndarray, float, list[Targets]]]) -> Figures:
    """Runs each (start q, lift joint, targets) stream; figures over all of them."""
    caps = ik.settings.joint_reference
    limits = {"speed": caps.max_speed_rad_s, "accel": caps.max_accel_rad_s2, "jerk": caps.max_jerk_rad_s3}
    over = {k: 0 for k in limits}
    peak = {k: 0.0 for k in limits}
    errors, cpu, ticks = [], [], 0
    for q0, lift, targets in streams:
        ik.reset(q0, lift_joint=lift)
        qs = [ik.arm_q()]
        for t in targets:
            c0 = time.thread_time()
            res = ik.tick(t)
            cpu.append(time.thread_time() - c0)
            qs.append(res.q)
            for s in SIDES:
                if t.get(s) is not None:
                    errors.append(float(np.linalg.norm(ik.grip_pose(s).position - t[s].position)))
        q = np.array(qs)
        ticks += len(targets)
        for order, key in ((1, "speed"), (2, "accel"), (3, "jerk")):
            d = np.abs(np.diff(q, order, axis=0)).max(axis=1) / ik.dt**order
            over[key] += int(np.sum(d > limits[key] * (1 + TOLERANCE)))
            peak[key] = max(peak[key], float(d.max()))
    return Figures(ticks, over, peak, np.array(errors), np.array(cpu) * 1e3)


def print_figures(stream: str, figures: dict[str, Figures], caps: JointReferenceConfig) -> None:
    print(f"\n{stream}: {next(iter(figures.values())).ticks} ticks of 10 ms")
    print(f"{'reference':<14} {'v > cap':>8} {'a > cap':>8} {'j > cap':>8} {'max |v|':>8} {'max |a|':>9} {'max |j|':>10} "
          f"{'err med mm':>10} {'err p95 mm':>10} {'cpu med ms':>10} {'cpu p99 ms':>10}")
    for name, f in figures.items():
        print(f"{name:<14} {f.over['speed']:8d} {f.over['accel']:8d} {f.over['jerk']:8d} {f.peak['speed']:8.2f} "
              f"{f.peak['accel']:9.1f} {f.peak['jerk']:10.0f} {np.median(f.errors_m) * 1e3:10.2f} "
              f"{np.percentile(f.errors_m, 95) * 1e3:10.2f} {np.median(f.cpu_ms):10.3f} {np.percentile(f.cpu_ms, 99):10.3f}")
    print(f"caps: {caps.max_speed_rad_s} rad/s, {caps.max_accel_rad_s2} rad/s², {caps.max_jerk_rad_s3} rad/s³ "
          f"(a tick counts once per cap it breaks on any joint)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--teleop-ticks", type=int, default=3000)
    ap.add_argument("--episodes", type=int, default=100, help="adversarial episodes of --episode-ticks")
    ap.add_argument("--episode-ticks", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    iks: dict[str, BimanualIk] = {"scaling": make("scaling"), "jerk-limited": make("jerk")}
    ref_ik = iks["jerk-limited"]
    home_q = np.array([ref_ik.profile.home_q()[n] for n in ref_ik.arm_joint_names])
    lift_mid = float(ref_ik.configuration.q[ref_ik.model.joint(ref_ik.profile.lift_joint).qposadr[0]])
    ref_ik.reset(home_q, lift_mid)
    teleop = [(home_q, lift_mid, teleop_walk(ref_ik, args.teleop_ticks, args.seed))]
    rng = np.random.default_rng(args.seed)
    lo, hi = ref_ik.model.jnt_range[ref_ik.model.joint(ref_ik.profile.lift_joint).id]
    adversarial = []
    for _ in range(args.episodes):
        lift = float(rng.uniform(lo, hi))
        ref_ik.reset(home_q, lift)
        home = {s: ref_ik.grip_pose(s) for s in SIDES}
        adversarial.append((home_q, lift, adversarial_stream(home, args.episode_ticks, rng)))
    caps = ref_ik.settings.joint_reference
    for name, streams in (("teleop (smooth, <= 0.3 m/s)", teleop), (f"adversarial ({args.episodes} episodes)", adversarial)):
        print_figures(name, {k: run_stream(ik, streams) for k, ik in iks.items()}, caps)


if __name__ == "__main__":
    main()
