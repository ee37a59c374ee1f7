"""The joint reference the arms are commanded to: a jerk-limited trajectory that
stops at the IK's last accepted goal, with a velocity feedforward.

Each tick the IK proposes a goal configuration (already shortened by the
collision guard and the merit backtracking). An online trajectory generator
(``ruckig``) plans, from the reference's current position, velocity and
acceleration, the time-optimal motion that *arrives at the goal and stops
there* under per-joint speed, acceleration and jerk caps; the reference
advances along that plan by the real length of the tick. Every plan starts
from the state the previous one reached, so position, velocity and
acceleration stay continuous whatever the goals do, and the caps hold at
every instant: a target that jumps, reverses or stops is met by braking
within the caps.

A goal is followed only if its plan **does not overshoot**: every joint stays
between where it is and the goal. A goal closer than the braking distance (a
reversal, a step the guard shortened, an arm that stops being driven while it
moves) cannot be met without passing it. Then the group **brakes**: it stops
as fast as the caps allow, provided that stop lies between where it is and the
goal of its current plan; failing that it **keeps** its current plan. Either
way it never moves beyond a goal accepted earlier, and once it is at rest the
new goal is followed. The reverse choice — re-planning towards a shortened
point and passing it — would move the arm where the collision guard refused
to; forcing the stop there would break the caps. The caller can also ask for
a safer mode per group (``brake`` or ``keep`` instead of ``goal``), e.g. when
the path of a new plan fails a collision check.

Joints are planned in groups (one per arm), each with its own generator, so
one arm braking does not delay the other. Holds and failed solves keep the
current plans. Goals are clamped into the joint range pulled inward by one
ulp (``nextafter``), and plans stay between the current position and their
goal, so the reference stays inside the range. The feedforward ``dq_ref`` is
the plan's velocity at the tick time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt
from ruckig import ControlInterface, InputParameter, Result, Ruckig, RuckigError, Synchronization, Trajectory

from teledora.operators.config import config_from_mapping
from teledora.operators.errors import TeledoraError

# a plan may pass its goal or its start by this much (rad) and still count as
# not overshooting: the generator's own rounding
_OVERSHOOT_TOLERANCE_RAD = 1e-9

MODES = ("goal", "brake", "keep")  # from the most to the least responsive
SAFER = {"goal": "brake", "brake": "keep", "keep": "keep"}


class JointReferenceError(TeledoraError, ValueError):
    """Inconsistent joint reference set-up or a non-finite proposal."""


@dataclass(frozen=True)
class JointReferenceConfig:
    """Caps applied to every arm joint (rad/s, rad/s², rad/s³)."""

    max_speed_rad_s: float
    max_accel_rad_s2: float
    max_jerk_rad_s3: float

    def __post_init__(self) -> None:
        if min(self.max_speed_rad_s, self.max_accel_rad_s2, self.max_jerk_rad_s3) <= 0:
            raise JointReferenceError("caps must be > 0")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "JointReferenceConfig":
        """The ``joint_reference`` section, checked."""
        return config_from_mapping(cls, data, "joint_reference", JointReferenceError)

    def stopping_time_s(self) -> float:
        """Time the reference needs to stop from full speed (deceleration ramps
        in at the jerk cap, holds at the acceleration cap, ramps out); the
        braking distance is ``max_speed_rad_s`` times half of it."""
        v, a, j = self.max_speed_rad_s, self.max_accel_rad_s2, self.max_jerk_rad_s3
        return v / a + a / j if v * j >= a * a else 2.0 * float(np.sqrt(v / j))


@dataclass
class _Pending:
    """What one group will do: a plan (None: at rest), the time along it after
    the tick, and the mode that produced it."""

    plan: Trajectory | None
    time: float
    mode: str


class _Group:
    """One generator and its current plan for a subset of the joints."""

    def __init__(self, index: np.ndarray, config: JointReferenceConfig) -> None:
        n = len(index)
        self.index = index
        self.generator = Ruckig(n)
        self.input = InputParameter(n)
        self.input.max_velocity = [config.max_speed_rad_s] * n
        self.input.max_acceleration = [config.max_accel_rad_s2] * n
        self.input.max_jerk = [config.max_jerk_rad_s3] * n
        # every plan ends at rest: set once (each assignment converts a list)
        self.input.target_velocity = [0.0] * n
        self.input.target_acceleration = [0.0] * n
        self.plan: Trajectory | None = None  # None: at rest
        self.time = 0.0  # time along the plan

    @staticmethod
    def sample(plan: Trajectory | None, t: float, rest: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if plan is None or t >= plan.duration:  # at rest (at the plan's end)
            q = rest.copy() if plan is None else np.array(plan.at_time(plan.duration)[0])
            return q, np.zeros(len(rest)), np.zeros(len(rest))
        q, dq, ddq = plan.at_time(t)
        return np.array(q), np.array(dq), np.array(ddq)

    def _calculate(self, interface: ControlInterface, syncs: Sequence[Synchronization]) -> Trajectory | None:
        plan = Trajectory(len(self.index))
        self.input.control_interface = interface
        for sync in syncs:
            self.input.synchronization = sync
            try:
                if self.generator.calculate(self.input, plan) in (Result.Working, Result.Finished):
                    return plan
            except RuckigError:  # no profile for this synchronisation: try the next
                continue
        return None

    def _set_state(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> None:
        inp = self.input
        inp.current_position, inp.current_velocity, inp.current_acceleration = q.tolist(), dq.tolist(), ddq.tolist()

    def plan_to(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, goal: np.ndarray) -> Trajectory | None:
        """The time-optimal plan that stops at ``goal``, or None when it would
        overshoot (or no plan was found)."""
        self._set_state(q, dq, ddq)
        self.input.target_position = list(goal)
        # phase synchronisation (a straight joint-space line) when the generator finds one
        plan = self._calculate(ControlInterface.Position, (Synchronization.Phase, Synchronization.Time))
        return plan if plan is not None and _within(plan, q, goal) else None

    def brake(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, limit: np.ndarray) -> Trajectory | None:
        """The fastest stop (every joint on its own), or None when it would leave
        the span between ``q`` and ``limit`` (the current plan's goal)."""
        self._set_state(q, dq, ddq)
        stopping = self._calculate(ControlInterface.Velocity, (Synchronization.No,))
        if stopping is None:
            return None
        # the same stop as a position plan, whose extrema the generator reports
        # reliably (it does not for velocity plans)
        stop = np.array(stopping.at_time(stopping.duration)[0])
        self._set_state(q, dq, ddq)
        self.input.target_position = list(stop)
        plan = self._calculate(ControlInterface.Position, (Synchronization.No,))
        if plan is None or not _within(plan, q, stop):
            return None
        lo, hi = np.minimum(q, limit) - _OVERSHOOT_TOLERANCE_RAD, np.maximum(q, limit) + _OVERSHOOT_TOLERANCE_RAD
        return plan if np.all((stop >= lo) & (stop <= hi)) else None


def _within(plan: Trajectory, a: np.ndarray, b: np.ndarray) -> bool:
    """Whether every joint of the plan stays between a and b."""
    lo, hi = np.minimum(a, b) - _OVERSHOOT_TOLERANCE_RAD, np.maximum(a, b) + _OVERSHOOT_TOLERANCE_RAD
    return all(lo[k] <= e.min and e.max <= hi[k] for k, e in enumerate(plan.position_extrema))


class JointReference:
    """Jerk-limited reference for a fixed, ordered set of joints.

    Args:
        names: Joint names (the order of every array here).
        lower: Lower joint bounds (rad).
        upper: Upper joint bounds (rad).
        config: Speed, acceleration and jerk caps.
        groups: Index lists that are planned independently (e.g. one per
            arm); every joint in exactly one group. Default: one group.
    """

    def __init__(self, names: list[str], lower: npt.ArrayLike, upper: npt.ArrayLike, config: JointReferenceConfig,
                 groups: Sequence[Sequence[int]] | None = None) -> None:
        self.names = list(names)
        self.config = config
        self.lower = np.asarray(lower, dtype=float).copy()
        self.upper = np.asarray(upper, dtype=float).copy()
        n = len(self.names)
        if self.lower.shape != (n,) or self.upper.shape != (n,):
            raise JointReferenceError(f"expected {n} lower and upper bounds")
        if np.any(self.lower >= self.upper):
            raise JointReferenceError("every lower bound must be below its upper bound")
        groups = [list(range(n))] if groups is None else [[int(i) for i in g] for g in groups]
        if sorted(i for g in groups for i in g) != list(range(n)) or any(not g for g in groups):
            raise JointReferenceError(f"groups must split the {n} joints, each joint in exactly one non-empty group")
        self.groups = [_Group(np.array(g), config) for g in groups]
        self.lower_inner = np.nextafter(self.lower, np.inf)
        self.upper_inner = np.nextafter(self.upper, -np.inf)
        self._q = np.zeros(n)
        self._dq = np.zeros(n)
        self._ddq = np.zeros(n)
        self._goal = np.zeros(n)
        self._pending: list[_Pending] | None = None
        self._pending_q: np.ndarray | None = None
        self.initialized = False
        # per group and proposal: new goal followed / braked instead / current plan kept
        self.counts = {mode: 0 for mode in MODES}

    @property
    def q(self) -> np.ndarray:
        """Current reference (copy)."""
        return self._q.copy()

    @property
    def dq(self) -> np.ndarray:
        """Current feedforward velocity (copy)."""
        return self._dq.copy()

    @property
    def ddq(self) -> np.ndarray:
        """Current reference acceleration (copy)."""
        return self._ddq.copy()

    @property
    def goal(self) -> np.ndarray:
        """Where the current plans stop (copy)."""
        return self._goal.copy()

    def clamp(self, q: npt.ArrayLike) -> np.ndarray:
        """``q`` clamped into the inward-pulled bounds."""
        return np.minimum(np.maximum(np.asarray(q, dtype=float), self.lower_inner), self.upper_inner)

    def _check(self, q: npt.ArrayLike, what: str) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if q.shape != self._q.shape or not np.isfinite(q).all():
            raise JointReferenceError(f"{what} needs {len(self.names)} finite values")
        return q

    def reset(self, q: npt.ArrayLike) -> None:
        """Starts the reference at rest at ``q`` (clamped into bounds)."""
        self.reset_joints(np.arange(len(self.names)), q)
        self.initialized = True

    def reset_joints(self, index: npt.ArrayLike, q: npt.ArrayLike) -> None:
        """Puts whole groups at rest at new values (the others keep their
        plans), e.g. one arm resynchronised to its measurement.

        Args:
            index: Joint indices; they must make up whole groups.
            q: Full joint vector; only ``index`` is read.
        """
        q = self.clamp(self._check(q, "reset"))
        wanted = {int(i) for i in np.asarray(index).ravel()}
        hit = [g for g in self.groups if wanted & set(g.index.tolist())]
        if wanted != {i for g in hit for i in g.index.tolist()}:
            raise JointReferenceError("reset_joints must cover whole groups")
        for g in hit:
            g.plan, g.time = None, 0.0
            self._q[g.index] = q[g.index]
            self._dq[g.index] = 0.0
            self._ddq[g.index] = 0.0
            self._goal[g.index] = q[g.index]
        self._pending = self._pending_q = None

    def propose(self, q_goal: npt.ArrayLike, dt: float, modes: Sequence[str] | None = None) -> np.ndarray:
        """The reference after ``dt`` if ``q_goal`` becomes the goal (state
        unchanged until :meth:`commit`).

        Args:
            q_goal: Goal configuration (clamped into the bounds).
            dt: Length of the tick (s).
            modes: Per group, the most responsive mode allowed: ``goal``
                (follow the goal, else brake, else keep), ``brake`` (stop as
                fast as the caps allow, else keep) or ``keep`` (the current
                plan). Default: ``goal`` for every group.

        Raises:
            JointReferenceError: not initialised, bad dt or modes, or non-finite goal.
        """
        if not self.initialized:
            raise JointReferenceError("joint reference used before reset()")
        if not dt > 0:
            raise JointReferenceError(f"dt must be > 0, got {dt}")
        goal = self.clamp(self._check(q_goal, "a proposal"))
        modes = ["goal"] * len(self.groups) if modes is None else list(modes)
        if len(modes) != len(self.groups) or any(m not in MODES for m in modes):
            raise JointReferenceError(f"modes needs one of {MODES} per group ({len(self.groups)})")
        pending = []
        for g, mode in zip(self.groups, modes):
            i = g.index
            state = (self._q[i], self._dq[i], self._ddq[i])
            plan = g.plan_to(*state, goal[i]) if mode == "goal" else None
            if plan is not None:
                pending.append(_Pending(plan, dt, "goal"))
                continue
            plan = g.brake(*state, self._goal[i]) if mode in ("goal", "brake") and g.plan is not None else None
            pending.append(_Pending(plan, dt, "brake") if plan is not None else _Pending(g.plan, g.time + dt, "keep"))
        self._pending = pending
        self._pending_q = self._at(pending, 0.0)
        return self._pending_q.copy()

    @property
    def pending_modes(self) -> list[str]:
        """Per group, the mode the last proposal used."""
        return [p.mode for p in self._pending or []]

    def pending_path(self, spacing_s: float) -> np.ndarray:
        """Where the last proposal would take the reference: its configuration
        after the tick, then every ``spacing_s`` until every group has stopped
        (rows; the last row is where they stop)."""
        if self._pending is None:
            raise JointReferenceError("no proposal to trace")
        if not spacing_s > 0:
            raise JointReferenceError(f"spacing must be > 0, got {spacing_s}")
        remaining = max((p.plan.duration - p.time for p in self._pending if p.plan is not None), default=0.0)
        steps = int(np.ceil(max(remaining, 0.0) / spacing_s))
        return self.pending_points(np.arange(steps + 1) * spacing_s)

    def pending_points(self, later_s: npt.ArrayLike) -> np.ndarray:
        """The last proposal's configurations ``later_s`` seconds after the
        tick (rows; times past a plan's end give where it stops)."""
        if self._pending is None:
            raise JointReferenceError("no proposal to trace")
        times = np.asarray(later_s, dtype=float).ravel()
        out = np.empty((times.size, len(self._q)))
        out[:] = self._q
        for g, p in zip(self.groups, self._pending):
            if p.plan is not None:  # positions only: the path check samples many points a tick
                at, end = p.plan.at_time, p.plan.duration
                out[:, g.index] = [at(min(p.time + t, end))[0] for t in times.tolist()]
        return self.clamp(out)

    def pending_stop(self) -> np.ndarray:
        """Where the last proposal's plans stop."""
        if self._pending is None:
            raise JointReferenceError("no proposal to trace")
        return self._at(self._pending, np.inf)

    def _at(self, pending: list[_Pending], later_s: float) -> np.ndarray:
        out = self._q.copy()
        for g, p in zip(self.groups, pending):
            out[g.index] = g.sample(p.plan, p.time + later_s, self._q[g.index])[0]
        return self.clamp(out)

    def commit(self, q_new: npt.ArrayLike, dt: float) -> None:
        """Accepts the last proposal; ``q_new`` must be what :meth:`propose`
        returned (the reference only moves along its plans).

        Raises:
            JointReferenceError: nothing proposed, or ``q_new`` differs.
        """
        if self._pending is None or self._pending_q is None:
            raise JointReferenceError("commit without a proposal")
        if not np.array_equal(np.asarray(q_new, dtype=float), self._pending_q):
            raise JointReferenceError("commit must take the proposed configuration (shorten the goal, not the step)")
        for p in self._pending:
            self.counts[p.mode] += 1
        self._apply(self._pending)

    def hold(self, dt: float) -> None:
        """No new goal this tick: every group keeps following its plan (a moving
        arm brakes towards its last goal; an arm at rest stays)."""
        if not dt > 0:
            raise JointReferenceError(f"dt must be > 0, got {dt}")
        self._apply([_Pending(g.plan, g.time + dt, "keep") for g in self.groups])

    def _apply(self, pending: list[_Pending]) -> None:
        for g, p in zip(self.groups, pending):
            i = g.index
            q, dq, ddq = g.sample(p.plan, p.time, self._q[i])
            plan, t = p.plan, p.time
            if plan is not None:
                self._goal[i] = self._clamp_part(i, g.sample(plan, plan.duration, self._q[i])[0])
                if t >= plan.duration:  # arrived: at rest at the goal
                    plan, t = None, 0.0
            g.plan, g.time = plan, t
            self._q[i] = self._clamp_part(i, q)
            self._dq[i], self._ddq[i] = dq, ddq
        self._pending = self._pending_q = None

    def _clamp_part(self, index: np.ndarray, values: np.ndarray) -> np.ndarray:
        return np.minimum(np.maximum(values, self.lower_inner[index]), self.upper_inner[index])
