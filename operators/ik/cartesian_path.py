"""Straight-line Cartesian paths for both grips between two arm configurations,
timed under the joint caps.

Each grip travels the straight base_link line between its pose at ``q_from``
and at ``q_to``: position interpolated linearly, orientation by slerp, both
by one path parameter s in [0, 1]. IK is solved only at sparse knots — no
tip travels more than ``max_step_m`` / turns more than ``max_step_rad``
between two — each re-solved until it settles to ``settle_fraction`` of a
step (the last one to ``landing_tolerance_m``; a knot the posture attractor
holds off its target is re-settled with the attractor moved onto it, up to
``resettle_rounds`` times; when the last knot settles within
``same_branch_rad`` of ``q_to``, ``q_to`` itself, which reaches the goal
exactly, is the last knot). A cubic spline through the
knots in joint space is the geometric path; wherever it leaves the line by
more than ``knot_refine_m`` between knots, a knot is added there.

The path is then timed by TOPP-RA (:mod:`path_timing`): the fastest
rest-to-rest motion whose joint speeds and accelerations stay within the
joint reference's caps (planned at ``joint_cap_margin`` of them) and whose
tip speed, tip acceleration and turn rate stay within the requested and
configured caps. The trajectory is sampled at ``output_rate_hz`` and the
samples are checked as an arm receives them: joint speed and acceleration
against the full caps (else :class:`PathPlanningError` naming the joint and
the cap), and the tips against the line at the samples and between them
(joints interpolated linearly, at least every ``line_check_step_m`` of tip
motion), else :class:`PathPlanningError` too. Nothing is returned — so
nothing moves — unless every check passed.

An arm whose grip moves less than ``min_travel_m`` and turns less than
``min_rotation_rad`` is pinned at ``q_from``: below that, a difference between
two taught configurations is drift, and chasing it swings the elbow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import mujoco
import numpy as np
import numpy.typing as npt

from teledora.operators.config import config_from_mapping
from teledora.operators.errors import TeledoraError
from teledora.operators.geometry import Pose, quat_angle, quat_slerp
from teledora.operators.ik.ik_settings import IkConfigError
from teledora.operators.ik.ik_solver import BimanualIk, IkSolveError
from teledora.operators.ik.path_timing import PathTimingError, check_joint_caps, sample_at_rate, time_parameterise
from teledora.operators.model.sides import SIDES


class PathPlanningError(TeledoraError, RuntimeError):
    """A path sample is unreachable, the trajectory leaves its line, or it would break a joint cap."""


@dataclass(frozen=True)
class PathConfig:
    max_step_m: float
    max_step_rad: float
    settle_fraction: float
    landing_tolerance_m: float
    resettle_rounds: int
    max_settle_iterations: int
    pos_tolerance_m: float
    ori_tolerance_rad: float
    knot_refine_m: float
    max_refinements: int
    line_tolerance_m: float
    line_check_step_m: float
    min_travel_m: float
    min_rotation_rad: float
    same_branch_rad: float
    output_rate_hz: float
    joint_cap_margin: float
    gridpoints_per_knot: int
    max_tip_accel_m_s2: float
    max_tip_angular_accel_rad_s2: float
    default_speed_m_s: float
    default_angular_speed_rad_s: float

    def __post_init__(self) -> None:
        if min(self.max_step_m, self.max_step_rad, self.output_rate_hz, self.line_check_step_m, self.max_tip_accel_m_s2,
               self.max_tip_angular_accel_rad_s2, self.landing_tolerance_m, self.knot_refine_m) <= 0:
            raise IkConfigError("rates, steps, tolerances and caps must be > 0")
        if not 0 < self.joint_cap_margin <= 1:
            raise IkConfigError("joint_cap_margin must be in (0, 1]")
        if self.gridpoints_per_knot < 1:
            raise IkConfigError("gridpoints_per_knot must be >= 1")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "PathConfig":
        """The ``path`` section of ik.yaml, checked."""
        return config_from_mapping(cls, data, "path", PathPlanningError)

# a timing whose samples break a cap is planned again at this fraction of the
# previous caps, at most this many times
_RETIME_FACTOR = 0.9
_RETIMES = 4


@dataclass
class PathPlan:
    """A planned segment: the sampled joint trajectory plus what was checked."""

    joint_names: list[str]
    times: np.ndarray  # (N,) s from the start of the segment, 1/output_rate_hz apart
    q: np.ndarray  # (N, 12) arm joints
    knot_s: np.ndarray  # path parameter of the solved knots
    knot_q: np.ndarray
    duration_s: float
    pinned: dict[str, bool]
    start: dict[str, Pose]
    goal: dict[str, Pose]
    max_line_deviation_m: float = 0.0  # samples and between them
    landing_error_m: float = 0.0
    peak_tip_accel_m_s2: float = 0.0
    peak_tip_speed_m_s: float = 0.0
    peak_joint_speed_rad_s: float = 0.0  # from the samples, as an arm receives them
    peak_joint_accel_rad_s2: float = 0.0
    peak_joint_jerk_rad_s3: float = 0.0  # not capped; reported
    solves: int = 0
    stats: dict[str, float] = field(default_factory=dict)


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distances of the points ``p`` (N, 3) from the segment a-b."""
    ab = b - a
    n = float(ab @ ab)
    t = np.zeros(len(p)) if n == 0 else np.clip((p - a) @ ab / n, 0.0, 1.0)
    return np.linalg.norm(p - (a + t[:, None] * ab), axis=1)


class _TipKinematics:
    """Grip positions for many arm configurations (its own MuJoCo data: only
    kinematics, the planning IK's state is left alone)."""

    def __init__(self, ik: BimanualIk, lift_joint: float | None) -> None:
        self.model = ik.model
        self.data = mujoco.MjData(ik.model)
        self.data.qpos[:] = ik.configuration.q
        if lift_joint is not None:
            self.data.qpos[ik.model.joint(ik.profile.lift_joint).qposadr[0]] = lift_joint
        self.qadr = np.array([ik.model.joint(n).qposadr[0] for n in ik.arm_joint_names])
        self.sites = {s: ik.model.site(ik.profile.arms[s].grip_site).id for s in SIDES}

    def tips(self, q: np.ndarray) -> dict[str, np.ndarray]:
        """{side: (N, 3)} grip positions for the rows of ``q``."""
        out = {s: np.empty((len(q), 3)) for s in SIDES}
        for i, row in enumerate(q):
            self.data.qpos[self.qadr] = row
            mujoco.mj_kinematics(self.model, self.data)
            for s, sid in self.sites.items():
                out[s][i] = self.data.site_xpos[sid]
        return out


class CartesianPathPlanner:
    """Plans straight-line segments with a dedicated IK instance.

    Args:
        ik: IK used for planning only (its configuration is overwritten).
        config: Path settings (``path`` section of ik.yaml); the joint caps are
            the IK's joint reference caps.
    """

    def __init__(self, ik: BimanualIk, config: PathConfig) -> None:
        self.ik = ik
        self.config = config
        caps = ik.settings.joint_reference
        self.max_joint_speed_rad_s = caps.max_speed_rad_s
        self.max_joint_accel_rad_s2 = caps.max_accel_rad_s2
        # a knot settles with QP speed rows that allow a whole knot interval per
        # step: the knots are offline, speed belongs to the timing
        self.settle_dt_s = max(ik.dt, config.max_step_rad / caps.max_speed_rad_s)

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

    def _settle(self, targets: Mapping[str, Pose | None], knot: str, pos_settle: float) -> int:
        c = self.config
        ori_settle = pos_settle * c.max_step_rad / c.max_step_m
        iterations = 0
        for iterations in range(1, c.max_settle_iterations + 1):
            pos, ori = self._errors(targets)
            if pos <= pos_settle and ori <= ori_settle:
                break
            try:
                step = self.ik.settle_step(targets, self.settle_dt_s)
            except IkSolveError as exc:
                raise PathPlanningError(f"knot {knot}: {exc}") from None
            if np.max(np.abs(step)) < 1e-9:
                break  # converged as close as the posture/limits allow
        return iterations

    def _require_reached(self, targets: Mapping[str, Pose | None], knot: str) -> None:
        c = self.config
        pos, ori = self._errors(targets)
        if pos > c.pos_tolerance_m or ori > c.ori_tolerance_rad:
            raise PathPlanningError(
                f"knot {knot} is unreachable: grip {pos * 1000:.2f} mm / {ori:.4f} rad from its target "
                f"(tolerance {c.pos_tolerance_m * 1000:.2f} mm / {c.ori_tolerance_rad:.4f} rad)"
            )

    def _solve_knot(self, s: float, q_seed: np.ndarray, leg: "_Leg", last: bool = False) -> np.ndarray:
        """The arm configuration whose grips sit at path parameter s, solved from q_seed."""
        targets: dict[str, Pose | None] = {}
        for side in SIDES:
            if leg.pinned[side]:
                targets[side] = None
                continue
            targets[side] = Pose.of(
                (1 - s) * leg.start[side].position + s * leg.goal[side].position,
                quat_slerp(leg.start[side].orientation, leg.goal[side].orientation, float(s)),
            )
        self.ik.reset(q_seed, leg.lift_joint)
        self.ik.set_posture_target((1 - s) * leg.q_from + s * leg.q_to)
        c = self.config
        tolerance = c.landing_tolerance_m if last else c.settle_fraction * c.max_step_m
        self._settle(targets, f"at s = {s:.3f}", tolerance)
        # Near a singularity, or on another joint branch than the attractor, the
        # posture attractor holds the grips off their targets; attracted to where
        # they are, they settle onto them.
        for _ in range(c.resettle_rounds):
            if self._errors(targets)[0] <= tolerance:
                break
            self.ik.set_posture_target(self.ik.arm_q())
            self._settle(targets, f"at s = {s:.3f}", tolerance)
        self._require_reached(targets, f"at s = {s:.3f}")
        q = self.ik.arm_q()
        for side in SIDES:  # pinned arms hold exactly
            if leg.pinned[side]:
                idx = self.ik.joint_index(self.ik.profile.arms[side].joints)
                q[idx] = leg.q_from[idx]
        return q

    def _line_deviation(self, tips: dict[str, np.ndarray], leg: "_Leg") -> np.ndarray:
        """Per row, the largest distance of a moving grip from its line."""
        dev = np.zeros(len(next(iter(tips.values()))))
        for s in SIDES:
            if not leg.pinned[s]:
                dev = np.maximum(dev, _segment_distance(tips[s], leg.start[s].position, leg.goal[s].position))
        return dev

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
            speed_m_s: Most grip speed along the line (default from config).
            angular_speed_rad_s: Most grip turn rate (default from config).
            lift_joint: Lift joint value during the segment (default: unchanged).

        Raises:
            PathPlanningError: an unreachable sample, a trajectory off its
                line, or no timing within the joint caps.
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
        leg = _Leg(q_from, q_to, lift_joint, pinned, start, goal,
                   max(travel[s] for s in moving), max(turn[s] for s in moving))
        solves_before = self.ik.solves
        knot_s, knot_q = self._knots(leg)
        times, q = self._timed(leg, knot_s, knot_q, speed, ang_speed)
        plan = PathPlan(names, times, q, knot_s, knot_q, float(times[-1]), pinned, start, goal,
                        solves=self.ik.solves - solves_before)
        self._check(plan, leg)
        return plan

    def _knots(self, leg: "_Leg") -> tuple[np.ndarray, np.ndarray]:
        """Knots every max_step along the line, then more wherever the spline
        through them leaves the line by more than knot_refine_m."""
        c = self.config
        n = max(2, math.ceil(leg.travel_m / c.max_step_m), math.ceil(leg.turn_rad / c.max_step_rad))
        knot_s = list(np.linspace(0.0, 1.0, n + 1))
        knot_q = [leg.q_from.copy()]
        for k, s in enumerate(knot_s[1:], start=1):
            knot_q.append(self._solve_knot(s, knot_q[-1], leg, last=k == n))
        # The goal poses are those of q_to, so q_to solves the last knot exactly;
        # it replaces the iterate when the IK settled on its branch (near it).
        moving = np.concatenate([self.ik.joint_index(self.ik.profile.arms[s].joints) for s in SIDES if not leg.pinned[s]])
        if np.max(np.abs(knot_q[-1][moving] - leg.q_to[moving])) <= c.same_branch_rad:
            knot_q[-1][moving] = leg.q_to[moving]
        from scipy.interpolate import CubicSpline  # here, not at import: the ik node reads PathConfig only

        tipk = _TipKinematics(self.ik, leg.lift_joint)
        for _ in range(c.max_refinements):
            spline = CubicSpline(knot_s, knot_q, axis=0)
            ks = np.asarray(knot_s)
            sub = (ks[:-1, None] + np.diff(ks)[:, None] * np.linspace(0.0, 1.0, 9)[None, 1:-1])  # 7 inside each interval
            dev = self._line_deviation(tipk.tips(spline(sub.ravel())), leg).reshape(sub.shape).max(axis=1)
            split = np.flatnonzero(dev > c.knot_refine_m)
            if split.size == 0:
                break
            for k in split[::-1]:  # from the end, so earlier indices stay valid
                s_mid = 0.5 * (knot_s[k] + knot_s[k + 1])
                knot_s.insert(k + 1, s_mid)
                knot_q.insert(k + 1, self._solve_knot(s_mid, knot_q[k], leg))
        return np.asarray(knot_s), np.asarray(knot_q)

    def _timed(self, leg: "_Leg", knot_s: np.ndarray, knot_q: np.ndarray, speed: float,
               ang_speed: float) -> tuple[np.ndarray, np.ndarray]:
        """Samples of the fastest timing within every cap (retimed at lower
        caps while the samples break a joint cap)."""
        c = self.config
        n = knot_q.shape[1]
        # two extra path coordinates: the tips' distance along the line and turn angle
        extra = np.stack([knot_s * leg.travel_m, knot_s * leg.turn_rad], axis=1)
        path_q = np.hstack([knot_q, extra])
        vmax = np.concatenate([np.full(n, self.max_joint_speed_rad_s), [speed, ang_speed]])
        amax = np.concatenate([np.full(n, self.max_joint_accel_rad_s2), [c.max_tip_accel_m_s2, c.max_tip_angular_accel_rad_s2]])
        used = [d for d in range(n + 2) if np.ptp(path_q[:, d]) > 0]  # still coordinates carry no constraint
        gridpoints = c.gridpoints_per_knot * (len(knot_s) - 1) + 1
        margin = c.joint_cap_margin
        violation = None
        for _ in range(_RETIMES + 1):
            scale = np.concatenate([np.full(n, margin), [1.0, 1.0]])
            try:
                timed = time_parameterise(knot_s, path_q[:, used], (vmax * scale)[used], (amax * scale)[used], gridpoints)
            except PathTimingError as exc:
                raise PathPlanningError(str(exc)) from None
            times, samples = sample_at_rate(timed, c.output_rate_hz)
            q = np.empty((len(times), n))
            joints = [u for u in used if u < n]
            q[:, [u for u in range(n) if u not in joints]] = knot_q[0, [u for u in range(n) if u not in joints]]
            q[:, joints] = samples[:, :len(joints)]
            violation = check_joint_caps(times, q, self.ik.arm_joint_names, self.max_joint_speed_rad_s,
                                         self.max_joint_accel_rad_s2)
            if violation is None:
                return times, q
            margin *= _RETIME_FACTOR
        raise PathPlanningError(f"no timing within the joint caps: {violation}")

    def _check(self, plan: PathPlan, leg: "_Leg") -> None:
        """Measures the samples as an arm receives them: tips at and between
        samples against the line, landing, joint and tip peaks."""
        c = self.config
        tipk = _TipKinematics(self.ik, leg.lift_joint)
        tips = tipk.tips(plan.q)
        dt = 1.0 / c.output_rate_hz
        moved = np.max([np.linalg.norm(np.diff(tips[s], axis=0), axis=1) for s in SIDES if not plan.pinned[s]], axis=0)
        between = []  # joints interpolated linearly between samples, one check per line_check_step_m of tip motion
        for k in np.flatnonzero(moved > c.line_check_step_m):
            m = math.ceil(moved[k] / c.line_check_step_m)
            f = np.arange(1, m)[:, None] / m
            between.append((1 - f) * plan.q[k] + f * plan.q[k + 1])
        dev = self._line_deviation(tips, leg).max()
        if between:
            dev = max(dev, float(self._line_deviation(tipk.tips(np.vstack(between)), leg).max()))
        plan.max_line_deviation_m = float(dev)
        plan.landing_error_m = max(float(np.linalg.norm(tips[s][-1] - leg.goal[s].position)) for s in SIDES if not plan.pinned[s])
        if len(plan.q) >= 3:
            for s in SIDES:
                if plan.pinned[s]:
                    continue
                plan.peak_tip_speed_m_s = max(plan.peak_tip_speed_m_s, float(np.max(np.linalg.norm(np.diff(tips[s], axis=0), axis=1))) / dt)
                plan.peak_tip_accel_m_s2 = max(plan.peak_tip_accel_m_s2, float(np.max(np.linalg.norm(np.diff(tips[s], 2, axis=0), axis=1))) / dt**2)
        padded = np.vstack([plan.q[:1], plan.q, plan.q[-1:]])  # at rest before and after
        plan.peak_joint_speed_rad_s = float(np.max(np.abs(np.diff(padded, axis=0)))) / dt
        plan.peak_joint_accel_rad_s2 = float(np.max(np.abs(np.diff(padded, 2, axis=0)))) / dt**2
        padded = np.vstack([plan.q[:1], plan.q[:1], plan.q, plan.q[-1:], plan.q[-1:]])
        plan.peak_joint_jerk_rad_s3 = float(np.max(np.abs(np.diff(padded, 3, axis=0)))) / dt**3
        if dev > c.line_tolerance_m:
            raise PathPlanningError(
                f"trajectory leaves its line by {dev * 1000:.3f} mm (tolerance {c.line_tolerance_m * 1000:.3f} mm)"
            )


@dataclass(frozen=True)
class _Leg:
    """What one segment is about."""

    q_from: np.ndarray
    q_to: np.ndarray
    lift_joint: float | None
    pinned: dict[str, bool]
    start: dict[str, Pose]
    goal: dict[str, Pose]
    travel_m: float  # the longest grip travel
    turn_rad: float  # the largest grip turn
