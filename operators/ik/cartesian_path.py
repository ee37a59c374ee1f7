"""Straight-line Cartesian paths for both grips between two arm configurations.

Each grip travels the straight world-frame (base_link) line between its pose
at ``q_from`` and at ``q_to``: position interpolated linearly, orientation by
slerp, timed by the minimum-jerk profile (zero velocity and acceleration at
both ends; peak speed 1.875 × average). IK is solved only at sparse knots —
at least ``plan_rate_hz`` per second of path time and close enough that no tip
travels more than ``max_step_m`` / turns more than ``max_step_rad`` between
knots — each knot re-solved until it settles to ``settle_fraction`` of a step.
A clamped cubic spline through the knots gives the dense trajectory, so the
small knot-to-knot wobble of individual solves does not turn into
acceleration noise.

A knot farther than ``pos_tolerance_m`` / ``ori_tolerance_rad`` from its
target raises :class:`PathPlanningError` before anything is returned (so
before anything moves); the dense trajectory is checked against the line too.
An arm whose grip moves less than ``min_travel_m`` and turns less than
``min_rotation_rad`` is pinned at ``q_from``: below that, a difference between
two taught configurations is drift, and chasing it swings the elbow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import numpy.typing as npt
from scipy.interpolate import CubicSpline

from teledora.operators.errors import TeledoraError
from teledora.operators.geometry import Pose, quat_angle, quat_slerp
from teledora.operators.ik.ik_solver import BimanualIk, IkSolveError
from teledora.operators.model.sides import SIDES
from teledora.operators.config import config_from_mapping
from teledora.operators.ik.ik_settings import IkConfigError


class PathPlanningError(TeledoraError, RuntimeError):
    """A path sample is unreachable or the trajectory leaves its line."""


@dataclass(frozen=True)
class PathConfig:
    plan_rate_hz: float
    max_step_m: float
    max_step_rad: float
    settle_fraction: float
    max_settle_iterations: int
    pos_tolerance_m: float
    ori_tolerance_rad: float
    line_tolerance_m: float
    min_travel_m: float
    min_rotation_rad: float
    output_rate_hz: float
    default_speed_m_s: float
    default_angular_speed_rad_s: float

    def __post_init__(self) -> None:
        if min(self.plan_rate_hz, self.max_step_m, self.max_step_rad, self.output_rate_hz) <= 0:
            raise IkConfigError("rates and step sizes must be > 0")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "PathConfig":
        """The ``path`` section of ik.yaml, checked."""
        return config_from_mapping(cls, data, "path", PathPlanningError)


def min_jerk(tau: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Minimum-jerk progress s(τ), ds/dτ, d²s/dτ² for τ in [0, 1]."""
    t = np.clip(np.asarray(tau, dtype=float), 0.0, 1.0)
    s = t**3 * (10 - 15 * t + 6 * t**2)
    ds = 30 * t**2 * (1 - t) ** 2
    dds = 60 * t * (1 - t) * (1 - 2 * t)
    return s, ds, dds


@dataclass
class PathPlan:
    """A planned segment: dense joint trajectory plus what was checked."""

    joint_names: list[str]
    times: np.ndarray  # (N,) s from the start of the segment
    q: np.ndarray  # (N, 12) arm joints
    knot_times: np.ndarray
    knot_q: np.ndarray
    duration_s: float
    pinned: dict[str, bool]
    start: dict[str, Pose]
    goal: dict[str, Pose]
    max_line_deviation_m: float = 0.0
    landing_error_m: float = 0.0
    peak_tip_accel_m_s2: float = 0.0
    peak_tip_speed_m_s: float = 0.0
    solves: int = 0
    stats: dict[str, float] = field(default_factory=dict)


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    ab = b - a
    n = float(ab @ ab)
    t = 0.0 if n == 0 else float(np.clip((p - a) @ ab / n, 0.0, 1.0))
    return float(np.linalg.norm(p - (a + t * ab)))


class CartesianPathPlanner:
    """Plans straight-line segments with a dedicated IK instance.

    Args:
        ik: IK used for planning only (its configuration is overwritten).
        config: Path settings (``path`` section of ik.yaml).
    """

    def __init__(self, ik: BimanualIk, config: PathConfig) -> None:
        self.ik = ik
        self.config = config

    def grip_poses(self, q: npt.ArrayLike, lift_joint: float | None = None) -> dict[str, Pose]:
        """Grip poses in base_link for an arm configuration."""
        self.ik.reset(np.asarray(q, dtype=float), lift_joint)
        return {s: self.ik.grip_pose(s) for s in SIDES}

    def _errors(self, targets: Mapping[str, Pose | None]) -> tuple[float, float]:
        pos, ori = 0.0, 0.0
        for s, t in targets.items():
            if t is None:
                continue
            pose = self.ik.grip_pose(s)
            pos = max(pos, float(np.linalg.norm(pose.position - t.position)))
            ori = max(ori, quat_angle(pose.orientation, t.orientation))
        return pos, ori

    def _settle(self, targets: Mapping[str, Pose | None], knot: int) -> int:
        c = self.config
        pos_settle, ori_settle = c.settle_fraction * c.max_step_m, c.settle_fraction * c.max_step_rad
        iterations = 0
        for iterations in range(1, c.max_settle_iterations + 1):
            pos, ori = self._errors(targets)
            if pos <= pos_settle and ori <= ori_settle:
                break
            try:
                step = self.ik.settle_step(targets)
            except IkSolveError as exc:
                raise PathPlanningError(f"knot {knot}: {exc}") from None
            if np.max(np.abs(step)) < 1e-7:
                break  # converged as close as the posture/limits allow
        pos, ori = self._errors(targets)
        if pos > c.pos_tolerance_m or ori > c.ori_tolerance_rad:
            raise PathPlanningError(
                f"knot {knot} is unreachable: grip {pos * 1000:.2f} mm / {ori:.4f} rad from its target "
                f"(tolerance {c.pos_tolerance_m * 1000:.2f} mm / {c.ori_tolerance_rad:.4f} rad)"
            )
        return iterations

    def plan(
        self,
        q_from: npt.ArrayLike,
        q_to: npt.ArrayLike,
        speed_m_s: float | None = None,
        angular_speed_rad_s: float | None = None,
        lift_joint: float | None = None,
    ) -> PathPlan:
        """Plans one straight-line segment from ``q_from`` to the grip poses of ``q_to``.

        Args:
            q_from, q_to: Arm configurations (12 values, ``ik.arm_joint_names`` order).
            speed_m_s: Average grip speed along the line (default from config).
            angular_speed_rad_s: Average grip turn rate (default from config).
            lift_joint: Lift joint value during the segment (default: unchanged).

        Raises:
            PathPlanningError: an unreachable sample or a trajectory off its line.
        """
        c = self.config
        speed = speed_m_s or c.default_speed_m_s
        ang_speed = angular_speed_rad_s or c.default_angular_speed_rad_s
        if speed <= 0 or ang_speed <= 0:
            raise PathPlanningError("speeds must be > 0")
        q_from = np.asarray(q_from, dtype=float)
        q_to = np.asarray(q_to, dtype=float)
        goal = self.grip_poses(q_to, lift_joint)
        start = self.grip_poses(q_from, lift_joint)
        travel = {s: float(np.linalg.norm(goal[s].position - start[s].position)) for s in SIDES}
        turn = {s: quat_angle(start[s].orientation, goal[s].orientation) for s in SIDES}
        pinned = {s: travel[s] < c.min_travel_m and turn[s] < c.min_rotation_rad for s in SIDES}
        moving = [s for s in SIDES if not pinned[s]]
        names = list(self.ik.arm_joint_names)
        if not moving:
            q = q_from[None, :]
            return PathPlan(names, np.zeros(1), q, np.zeros(1), q, 0.0, pinned, start, goal)

        duration = max(max(travel[s] / speed, turn[s] / ang_speed) for s in moving)
        peak = 1.875
        n_knots = max(
            2,
            math.ceil(duration * c.plan_rate_hz),
            math.ceil(peak * max(travel[s] for s in moving) / c.max_step_m),
            math.ceil(peak * max(turn[s] for s in moving) / c.max_step_rad),
        )
        knot_t = np.linspace(0.0, duration, n_knots + 1)
        s_knots, _, _ = min_jerk(knot_t / duration)
        knot_q = np.empty((len(knot_t), len(names)))
        self.ik.reset(q_from, lift_joint)
        solves_before = self.ik.solves
        for k, s in enumerate(s_knots):
            targets: dict[str, Pose | None] = {}
            for side in SIDES:
                if pinned[side]:
                    targets[side] = None
                    continue
                targets[side] = Pose.of(
                    (1 - s) * start[side].position + s * goal[side].position,
                    quat_slerp(start[side].orientation, goal[side].orientation, float(s)),
                )
            self.ik.set_posture_target((1 - s) * q_from + s * q_to)
            self._settle(targets, k)
            knot_q[k] = self.ik.arm_q()
        for side in SIDES:  # pinned arms hold exactly
            if pinned[side]:
                idx = self.ik.joint_index(self.ik.profile.arms[side].joints)
                knot_q[:, idx] = q_from[idx]
        spline = CubicSpline(knot_t, knot_q, bc_type="clamped", axis=0)
        n_out = max(2, int(round(duration * c.output_rate_hz)) + 1)
        times = np.linspace(0.0, duration, n_out)
        plan = PathPlan(names, times, spline(times), knot_t, knot_q, duration, pinned, start, goal,
                        solves=self.ik.solves - solves_before)
        self._check(plan, lift_joint)
        return plan

    def _check(self, plan: PathPlan, lift_joint: float | None) -> None:
        """Measures the dense trajectory: line deviation, landing error, tip speed and acceleration."""
        tips = {s: np.empty((len(plan.times), 3)) for s in SIDES}
        for i, q in enumerate(plan.q):
            self.ik.reset(q, lift_joint)
            for s in SIDES:
                tips[s][i] = self.ik.grip_pose(s).position
        dev, land, acc, vel = 0.0, 0.0, 0.0, 0.0
        dt = plan.times[1] - plan.times[0]
        for s in SIDES:
            if plan.pinned[s]:
                continue
            a, b = plan.start[s].position, plan.goal[s].position
            dev = max(dev, max(_segment_distance(p, a, b) for p in tips[s]))
            land = max(land, float(np.linalg.norm(tips[s][-1] - b)))
            if len(tips[s]) >= 3:
                vel = max(vel, float(np.max(np.linalg.norm(np.diff(tips[s], axis=0), axis=1)) / dt))
                acc = max(acc, float(np.max(np.linalg.norm(np.diff(tips[s], 2, axis=0), axis=1)) / dt**2))
        plan.max_line_deviation_m, plan.landing_error_m = dev, land
        plan.peak_tip_speed_m_s, plan.peak_tip_accel_m_s2 = vel, acc
        if dev > self.config.line_tolerance_m:
            raise PathPlanningError(
                f"trajectory leaves its line by {dev * 1000:.2f} mm (tolerance {self.config.line_tolerance_m * 1000:.2f} mm)"
            )


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
