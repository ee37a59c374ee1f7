"""Waypoint lists: legs of straight-line grip paths planned one after the other.

A waypoint is a full arm configuration or grip offsets from the previous one;
each leg starts from the previous leg's last sample, so no leg jumps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import numpy.typing as npt

from teledora.operators.geometry import Pose
from teledora.operators.ik.cartesian_path import CartesianPathPlanner, PathPlan, PathPlanningError
from teledora.operators.model.sides import SIDES


@dataclass(frozen=True)
class Waypoint:
    """One taught waypoint: a full arm configuration, or grip offsets from the previous one.

    Exactly one of ``q`` (12 values, arm_joint_names order) and ``offsets_m``
    (side -> base_link translation of that grip) is set.
    """

    name: str
    q: np.ndarray | None = None
    offsets_m: dict[str, np.ndarray] | None = None
    speed_m_s: float | None = None
    angular_speed_rad_s: float | None = None


def solve_offsets(planner: CartesianPathPlanner, q0: np.ndarray, offsets_m: Mapping[str, npt.ArrayLike],
                  lift_joint: float | None = None) -> np.ndarray:
    """A configuration whose grips are moved by ``offsets_m`` from q0's grips
    (orientation kept; arms without an offset stay where they are).

    Raises:
        PathPlanningError: the offset pose cannot be reached within tolerance.
    """
    ik, c = planner.ik, planner.config
    ik.reset(q0, lift_joint)
    targets = {}
    for s in SIDES:
        pose = ik.grip_pose(s)
        targets[s] = Pose.of(pose.position + np.asarray(offsets_m.get(s, np.zeros(3)), dtype=float), pose.orientation)
    ik.set_posture_target(q0)
    for _ in range(c.max_settle_iterations * 4):
        step = ik.settle_step(targets)
        if np.max(np.abs(step)) < 1e-9:
            break
    pos, ori = planner._errors(targets)
    if pos > c.pos_tolerance_m or ori > c.ori_tolerance_rad:
        raise PathPlanningError(f"offset target unreachable: {pos * 1000:.2f} mm / {ori:.4f} rad away")
    return ik.arm_q()


def plan_waypoints(planner: CartesianPathPlanner, waypoints: list[Waypoint], lift_joint: float | None = None) -> list[PathPlan]:
    """Plans the legs between consecutive waypoints; each leg starts from the
    previous leg's final vector (what the arm actually reached), so no leg
    jumps. The first waypoint must be a configuration.

    Raises:
        PathPlanningError: a leg is unreachable (nothing is returned then).
    """
    if len(waypoints) < 2:
        raise PathPlanningError("a waypoint list needs at least two waypoints")
    if waypoints[0].q is None:
        raise PathPlanningError(f"the first waypoint ({waypoints[0].name}) must give joint values, not offsets")
    plans: list[PathPlan] = []
    q_now = np.asarray(waypoints[0].q, dtype=float)
    for prev, wp in zip(waypoints[:-1], waypoints[1:]):
        q_goal = wp.q if wp.q is not None else solve_offsets(planner, q_now, wp.offsets_m or {}, lift_joint)
        try:
            plan = planner.plan(q_now, q_goal, wp.speed_m_s, wp.angular_speed_rad_s, lift_joint)
        except PathPlanningError as exc:
            raise PathPlanningError(f"leg {prev.name} -> {wp.name}: {exc}") from None
        plans.append(plan)
        q_now = plan.q[-1]
    return plans
