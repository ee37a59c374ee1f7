"""Straight-line path accuracy on a 35 cm leg, sparse solves vs solving every tick.

Both grips travel 35 cm forward and up (left from (0.20, 0.18, 0.30) to
(0.45, 0.18, 0.545) m in base_link, right mirrored) at 0.08 and 1.0 m/s
average speed. For each speed the planner runs twice: as configured (sparse,
distance-bounded solves + clamped cubic spline) and with a solve at every
output sample. Prints the largest distance from the line, the landing error,
the peak tip acceleration next to the minimum-jerk profile's own optimum
(5.77 L / T²), the number of solves and the planning time.

    python benchmarks/cartesian_path.py
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from teledora import models
from teledora.operators.ik.cartesian_path import CartesianPathPlanner
from teledora.operators.geometry import Pose
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.model.sides import SIDES
from teledora.models.config_files import load_ik_config

START_L = np.array([0.20, 0.18, 0.30])
END_L = np.array([0.45, 0.18, 0.545])
MIRROR = np.array([1.0, -1.0, 1.0])
LIFT_JOINT = 0.0
SPEEDS = (0.08, 1.0)


def configuration_at(ik: BimanualIk, q0: np.ndarray, left: np.ndarray) -> np.ndarray:
    """IK configuration with the left grip at ``left`` and the right one mirrored (orientation kept)."""
    ik.reset(q0, LIFT_JOINT)
    targets = {"left": Pose.of(left, ik.grip_pose("left").orientation),
               "right": Pose.of(left * MIRROR, ik.grip_pose("right").orientation)}
    for _ in range(800):
        ik.settle_step(targets)
    err = max(float(np.linalg.norm(ik.grip_pose(s).position - targets[s].position)) for s in SIDES)
    if err > 1e-3:
        raise RuntimeError(f"benchmark leg endpoint not reachable ({err * 1000:.2f} mm)")
    return ik.arm_q()


def main() -> None:
    ik_config = load_ik_config()
    settings = ik_config.settings
    ik = BimanualIk(build_ik_model(models.path(settings.solver.model), True), models.load_profile(), settings)
    config = ik_config.path
    q_a = configuration_at(ik, ik.arm_q(), START_L)
    q_b = configuration_at(ik, q_a, END_L)
    dense_step = 1e-4
    dense = dataclasses.replace(config, plan_rate_hz=config.output_rate_hz, max_step_m=dense_step,
                                settle_fraction=config.settle_fraction * config.max_step_m / dense_step)
    print("35 cm straight leg, both grips (forward + up), min-jerk timing")
    print(f"{'speed m/s':>9} {'solves at':<12} {'length m':>8} {'line dev mm':>11} {'landing mm':>10} {'peak acc m/s2':>13} "
          f"{'optimum':>8} {'solves':>7} {'plan s':>7}")
    for speed in SPEEDS:
        for label, cfg in (("sparse", config), ("every tick", dense)):
            planner = CartesianPathPlanner(ik, cfg)
            t0 = time.perf_counter()
            plan = planner.plan(q_a, q_b, speed_m_s=speed, lift_joint=LIFT_JOINT)
            elapsed = time.perf_counter() - t0
            length = max(float(np.linalg.norm(plan.goal[s].position - plan.start[s].position)) for s in SIDES)
            optimum = 5.7735 * length / plan.duration_s**2
            print(f"{speed:9.2f} {label:<12} {length:8.3f} {plan.max_line_deviation_m * 1000:11.3f} "
                  f"{plan.landing_error_m * 1000:10.4f} {plan.peak_tip_accel_m_s2:13.3f} {optimum:8.3f} "
                  f"{plan.solves:7d} {elapsed:7.2f}")


if __name__ == "__main__":
    main()
