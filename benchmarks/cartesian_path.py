"""Straight-line paths timed under the joint caps: accuracy, joint peaks vs caps,
planning time.

1. The 35 cm leg: both grips travel 35 cm forward and up (left from
   (0.25, 0.18, 0.40) to (0.50, 0.18, 0.645) m in base_link, right mirrored;
   the former start, 0.30 m high, is not reached by this benchmark's settle
   from the unfolded posture with the whole-robot proxies),
   at 0.08 and 1.0 m/s requested tip speed. Printed: duration, knots, IK
   solves, the largest distance from the line (at the 100 Hz samples and
   between them), the landing error, joint speed / acceleration / jerk peaks
   of the samples next to the caps, tip peaks, and the planning time (thread
   CPU and wall, median of --repeats).
Legs start from an unfolded posture (shoulder lift -0.6, elbow 0.3, wrist
flex 0.6 rad), not the folded home one.

2. A fixed set of legs (seeded): both grips from a random reachable pose to
   another 10-35 cm away in a random direction, with a random turn of up to
   0.5 rad, plus one leg that stretches both arms forward at 0.5 m height as
   far as the IK reaches them (5 mm steps from 0.55 m off the shoulder axis);
   at 0.08 and 1.0 m/s. Printed: legs
   planned and refused (and why), the worst figures over the planned ones,
   and the planning time percentiles.

Side by side, the former timing of the same joint paths (the minimum-jerk
profile at the requested speed as an average, no joint caps): its joint
peaks, from the same spline through the same knots sampled at 100 Hz.

    python benchmarks/cartesian_path.py [--legs 20] [--repeats 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from scipy.interpolate import CubicSpline

from teledora import models
from teledora.models.config_files import load_ik_config
from teledora.operators.geometry import Pose, quat_multiply
from teledora.operators.ik.cartesian_path import CartesianPathPlanner, PathPlan, PathPlanningError
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.model.sides import SIDES

START_L = np.array([0.25, 0.18, 0.40])
END_L = np.array([0.50, 0.18, 0.645])
MIRROR = np.array([1.0, -1.0, 1.0])
LIFT_JOINT = 0.0
SPEEDS = (0.08, 1.0)
# an unfolded posture the legs start from: at the folded home posture the arms'
# own links leave a straight line little room in most directions
READY = {"shoulder_lift": -0.6, "elbow_flex": 0.3, "wrist_flex": 0.6}


def ready_q(ik: BimanualIk) -> np.ndarray:
    home = ik.profile.home_q()
    return np.array([READY.get(j.split("_", 1)[1], home[j]) for j in ik.arm_joint_names])


def settle_to(ik: BimanualIk, q0: np.ndarray, targets: dict[str, Pose], tolerance_m: float = 1e-3) -> np.ndarray | None:
    """IK configuration reaching ``targets`` from q0, or None."""
    ik.reset(q0, LIFT_JOINT)
    ik.set_posture_target(q0)
    for _ in range(800):
        if np.max(np.abs(ik.settle_step(targets, 0.05))) < 1e-10:
            break
    err = max(float(np.linalg.norm(ik.grip_pose(s).position - targets[s].position)) for s in SIDES)
    return ik.arm_q() if err <= tolerance_m else None


def configuration_at(ik: BimanualIk, q0: np.ndarray, left: np.ndarray) -> np.ndarray:
    """IK configuration with the left grip at ``left`` and the right one mirrored (orientation kept)."""
    ik.reset(q0, LIFT_JOINT)
    targets = {"left": Pose.of(left, ik.grip_pose("left").orientation),
               "right": Pose.of(left * MIRROR, ik.grip_pose("right").orientation)}
    q = settle_to(ik, q0, targets)
    if q is None:
        raise RuntimeError("benchmark leg endpoint not reachable")
    return q


def min_jerk_peaks(plan: PathPlan, speed: float, rate_hz: float) -> tuple[float, float]:
    """Joint speed and acceleration peaks of the former timing: the same joint
    spline through the same knots, progress on the minimum-jerk profile over
    length / speed (speed as an average), sampled at rate_hz."""
    length = max(float(np.linalg.norm(plan.goal[s].position - plan.start[s].position)) for s in SIDES if not plan.pinned[s])
    duration = length / speed
    t = np.arange(int(np.ceil(duration * rate_hz)) + 1) / rate_hz
    tau = np.clip(t / duration, 0.0, 1.0)
    s = tau**3 * (10 - 15 * tau + 6 * tau**2)
    q = CubicSpline(plan.knot_s, plan.knot_q, axis=0)(s)
    padded = np.vstack([q[:1], q, q[-1:]])
    dt = 1.0 / rate_hz
    return float(np.abs(np.diff(padded, axis=0)).max() / dt), float(np.abs(np.diff(padded, 2, axis=0)).max() / dt**2)


@dataclass
class Timed:
    plan: PathPlan | None
    cpu_s: float
    wall_s: float
    error: str = ""


def timed_plan(planner: CartesianPathPlanner, q_a: np.ndarray, q_b: np.ndarray, speed: float) -> Timed:
    w0, c0 = time.perf_counter(), time.thread_time()
    try:
        plan, error = planner.plan(q_a, q_b, speed_m_s=speed, angular_speed_rad_s=10 * speed, lift_joint=LIFT_JOINT), ""
    except PathPlanningError as exc:
        plan, error = None, str(exc)
    return Timed(plan, time.thread_time() - c0, time.perf_counter() - w0, error)


def random_legs(ik: BimanualIk, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """n legs between reachable poses 10-35 cm apart (see the module docstring),
    plus the stretched leg."""
    rng = np.random.default_rng(seed)
    home = ready_q(ik)
    legs = []
    while len(legs) < n:
        ik.reset(home, LIFT_JOINT)
        start = {}
        for s in SIDES:
            pose = ik.grip_pose(s)
            start[s] = Pose.of(pose.position + rng.uniform([-0.05, -0.1, -0.2], [0.15, 0.1, 0.1]), pose.orientation)
        q_a = settle_to(ik, home, start)
        if q_a is None:
            continue
        goal = {}
        for s in SIDES:
            direction = rng.normal(size=3)
            axis = rng.normal(size=3)
            angle = rng.uniform(0.0, 0.5)
            turn = np.concatenate([axis / np.linalg.norm(axis) * np.sin(angle / 2), [np.cos(angle / 2)]])
            goal[s] = Pose.of(start[s].position + direction / np.linalg.norm(direction) * rng.uniform(0.1, 0.35),
                                    quat_multiply(turn, start[s].orientation))
        q_b = settle_to(ik, q_a, goal)
        if q_b is not None:
            legs.append((q_a, q_b))
    # the stretched leg: forward at shoulder height to the farthest reach (5 mm steps)
    shoulder = load_ik_config().workspace.shoulder_xy_m["left"]
    near = configuration_at(ik, home, np.array([0.30, 0.18, 0.50]))
    for reach in np.arange(0.55, 0.30, -0.005):
        try:
            legs.append((near, configuration_at(ik, near, np.array([shoulder[0] + reach, shoulder[1], 0.50]))))
            break
        except RuntimeError:
            continue
    return legs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--legs", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    ik_config = load_ik_config()
    settings = ik_config.settings
    ik = BimanualIk(build_ik_model(models.path(settings.solver.model), True), models.load_profile(), settings)
    config = ik_config.path
    planner = CartesianPathPlanner(ik, config)
    vcap, acap = planner.max_joint_speed_rad_s, planner.max_joint_accel_rad_s2
    q_a = configuration_at(ik, ready_q(ik), START_L)
    q_b = configuration_at(ik, q_a, END_L)

    print(f"joint caps {vcap} rad/s, {acap} rad/s² (timing planned at {config.joint_cap_margin:.0%} of them); "
          f"tip caps: requested speed, {config.max_tip_accel_m_s2} m/s²; {config.output_rate_hz:g} Hz samples")
    print("\n1. 35 cm leg, both grips forward + up")
    print(f"{'speed m/s':>9} {'time s':>6} {'knots':>5} {'solves':>6} {'line dev mm':>11} {'landing mm':>10} "
          f"{'joint rad/s':>11} {'rad/s2':>7} {'rad/s3':>7} {'tip m/s':>7} {'m/s2':>5} {'cpu s':>6} {'wall s':>6} "
          f"{'former: rad/s':>13} {'rad/s2':>7}")
    for speed in SPEEDS:
        runs = [timed_plan(planner, q_a, q_b, speed) for _ in range(args.repeats)]
        p = runs[0].plan
        former = min_jerk_peaks(p, speed, config.output_rate_hz)
        print(f"{speed:9.2f} {p.duration_s:6.2f} {len(p.knot_s):5d} {p.solves:6d} {p.max_line_deviation_m * 1e3:11.4f} "
              f"{p.landing_error_m * 1e3:10.5f} {p.peak_joint_speed_rad_s:11.3f} {p.peak_joint_accel_rad_s2:7.2f} "
              f"{p.peak_joint_jerk_rad_s3:7.0f} {p.peak_tip_speed_m_s:7.3f} {p.peak_tip_accel_m_s2:5.2f} "
              f"{np.median([r.cpu_s for r in runs]):6.3f} {np.median([r.wall_s for r in runs]):6.3f} "
              f"{former[0]:13.2f} {former[1]:7.1f}")

    legs = random_legs(ik, args.legs, args.seed)
    print(f"\n2. {len(legs)} legs ({args.legs} random, 10-35 cm, turns up to 0.5 rad, + one stretched to the reach limit)")
    print(f"{'speed m/s':>9} {'planned':>7} {'refused':>7} {'line dev mm':>11} {'landing mm':>10} {'joint rad/s':>11} "
          f"{'rad/s2':>7} {'rad/s3':>7} {'cpu med s':>9} {'cpu max s':>9} {'wall med s':>10} "
          f"{'former: rad/s':>13} {'rad/s2':>7} {'> cap':>5}")
    for speed in SPEEDS:
        runs = [timed_plan(planner, a, b, speed) for a, b in legs]
        plans = [r.plan for r in runs if r.plan is not None]
        former = [min_jerk_peaks(p, speed, config.output_rate_hz) for p in plans]
        over = sum(v > vcap or a > acap for v, a in former)
        print(f"{speed:9.2f} {len(plans):7d} {len(runs) - len(plans):7d} "
              f"{max(p.max_line_deviation_m for p in plans) * 1e3:11.4f} {max(p.landing_error_m for p in plans) * 1e3:10.5f} "
              f"{max(p.peak_joint_speed_rad_s for p in plans):11.3f} {max(p.peak_joint_accel_rad_s2 for p in plans):7.2f} "
              f"{max(p.peak_joint_jerk_rad_s3 for p in plans):7.0f} {np.median([r.cpu_s for r in runs]):9.3f} "
              f"{max(r.cpu_s for r in runs):9.3f} {np.median([r.wall_s for r in runs]):10.3f} "
              f"{max(v for v, _ in former):13.2f} {max(a for _, a in former):7.1f} {over:5d}")
        for r in runs:
            if r.plan is None:
                print(f"          refused: {r.error}")


if __name__ == "__main__":
    main()
