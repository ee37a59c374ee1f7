"""The ik node's control loop without dora: inputs in, JointCommands out.

Takes joint states, lift states and arm targets (decoded message mappings) with
host times passed in by the caller, and runs the bimanual IK on them. The
reference starts from the first joint state once the lift height is known and
is then integrated by the IK itself. A new target solves at once (its latency
is the solve, not the wait for a tick) unless a solve ran within the last
``min_solve_spacing_s`` (then it is left pending for the next tick); ticks
solve when nothing solved for 0.9 control periods. Each solve steps by the
real time since the previous one, so the caps hold in real time. An arm holds when it is disabled, its target is invalid or stale, or the
joint feedback is stale; a failed QP holds both arms. A holding arm measured
farther than ``resync_threshold_rad`` from its reference restarts from the
measurement, so enabling it again does not jump back.

Homing: each increase of the teleop ``reset_count`` after the first TeleopState
(which only sets the baseline) sends both arms to the profile's home
configuration, in two phases. First the home grip poses (forward kinematics
of the home arm joints at the current lift) become the targets of the normal
solve, through a homing speed limiter, so the joint caps and collision
constraints apply as for any target; the posture task usually brings the
joints home with the grip. An arm that has held the home grip target for
``home_settle_s`` without reaching the home joints (it is on another joint
branch: the same grip pose, other joints) then moves along a straight
joint-space route to the home joints, its farthest joint at most
``home_joint_speed_rad_s``, through the same solve (a joint goal in place of
its grip task). The route is the straight line when that keeps the arm's
clearance at every 0.1 rad, else one searched round the obstacles by the
global fallback's route planner (a straight line from home's neighbourhood
can pass through the band the collision rows keep clear, and the rows then
hold the arm short of home); the arm holds while the route is planned, a
few checks a tick. The grippers go to their home value. An arm stops homing when all its
joints are within ``home_tolerance_rad`` of home, when a new enabled target
arrives for it (the operator resumed), when the joint feedback goes stale,
when the e-stop latches, or after ``home_timeout_s`` without reaching home
(status ``home_timeout``; the arm holds where it is).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Mapping

import numpy as np

from teledora.operators.config import config_from_mapping
from teledora.operators.ik.grip_kinematics import GripKinematics
from teledora.operators.ik.ik_settings import IkConfigError
from teledora.operators.ik.ik_solver import BimanualIk, TickResult
from teledora.operators.contract.messages import MessageError, require_joint_names
from teledora.operators.model.robot_profile import RobotProfile
from teledora.operators.geometry import Pose, matrix_to_quat
from teledora.operators.model.sides import SIDES
from teledora.operators.ik.route_planner import RoutePlanner
from teledora.operators.ik.workspace_limits import CartesianSpeedLimiter, WorkspaceConfig, WorkspaceLimits

# the route home of the second homing phase: clearance checks in all, and per
# tick (about 0.1 ms each; 1,200 at 16 a tick is at most 0.75 s of planning)
HOME_ROUTE_CHECKS = 1200
HOME_ROUTE_CHECKS_PER_TICK = 16


@dataclass(frozen=True)
class IkNodeConfig:
    """The ``node`` section of the IK YAML: feedback and target timeouts,
    diagnostics period, the least spacing of target-driven solves, the resync
    threshold of a holding arm and homing."""

    joint_state_timeout_s: float
    target_timeout_s: float
    diagnostics_period_s: float
    min_solve_spacing_s: float
    resync_threshold_rad: float
    home_tolerance_rad: float
    home_linear_speed_m_s: float
    home_angular_speed_rad_s: float
    home_settle_s: float
    home_joint_speed_rad_s: float
    home_timeout_s: float

    def __post_init__(self) -> None:
        if not self.min_solve_spacing_s > 0:
            raise IkConfigError("min_solve_spacing_s must be > 0")
        if not (self.home_tolerance_rad > 0 and self.home_linear_speed_m_s > 0 and self.home_angular_speed_rad_s > 0
                and self.home_settle_s > 0 and self.home_joint_speed_rad_s > 0 and self.home_timeout_s > 0):
            raise IkConfigError("home_tolerance_rad, home_linear_speed_m_s, home_angular_speed_rad_s, home_settle_s, "
                                "home_joint_speed_rad_s and home_timeout_s must be > 0")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "IkNodeConfig":
        """The ``node`` section, checked."""
        return config_from_mapping(cls, data, "node", IkConfigError)


@dataclass
class ArmState:
    """One arm's last decision, reported in diagnostics."""

    status: str = "waiting"
    projection_m: float = 0.0
    rate_limited: bool = False
    was_active: bool = False


@dataclass
class IkLoop:
    """The ik node's logic without dora: feeds inputs to the IK, decides holds,
    and builds JointCommands. Times are host ns passed in by the caller."""

    ik: BimanualIk
    workspace: WorkspaceConfig
    config: IkNodeConfig
    profile: RobotProfile
    arms: dict[str, ArmState] = field(default_factory=lambda: {s: ArmState() for s in SIDES})

    def __post_init__(self) -> None:
        self.limits = WorkspaceLimits(self.workspace)
        self.limiters = {s: CartesianSpeedLimiter(self.workspace) for s in SIDES}
        self.period_ns = int(self.ik.dt * 1e9)
        self.initialized = False
        self.joint_stamp_ns: int | None = None
        self.lift_joint: float | None = None
        self.targets: dict[str, Any] | None = None
        self.targets_received_ns: int | None = None
        self.last_solve_ns: int | None = None
        self.pending = False
        self.gripper_ref = {s: 0.0 for s in SIDES}
        self.last_result: TickResult | None = None
        self.names = list(self.profile.arm_joint_names)
        self.targets_invalid = ""
        self.measured: dict[str, float] = {}
        self.resyncs = 0
        # homing: the teleop reset_count baseline (None until the first
        # TeleopState), which arms are homing, and their own speed limiters
        self.reset_count: int | None = None
        self.resets = 0
        self.homing = {s: False for s in SIDES}
        self.homing_since_ns: dict[str, int | None] = {s: None for s in SIDES}
        self.home_timeouts = 0
        home_caps = replace(self.workspace, max_linear_speed_m_s=self.config.home_linear_speed_m_s,
                            max_angular_speed_rad_s=self.config.home_angular_speed_rad_s)
        self.home_limiters = {s: CartesianSpeedLimiter(home_caps) for s in SIDES}
        self.home_kinematics = GripKinematics(self.ik.model, self.profile)
        self.home_q = self.profile.home_q()
        self.home_arm_q = {s: np.array([self.home_q[j] for j in self.profile.arms[s].joints]) for s in SIDES}
        # second homing phase: when the grip target arrived home (ns), and the joint goal moving home
        self.home_grip_since_ns: dict[str, int | None] = {s: None for s in SIDES}
        self.home_ramp: dict[str, np.ndarray | None] = {s: None for s in SIDES}
        self.home_route: dict[str, list[np.ndarray]] = {s: [] for s in SIDES}  # waypoints, home last
        self.home_planner: dict[str, RoutePlanner | None] = {s: None for s in SIDES}
        self.home_routes_not_found = 0
        self.goals: dict[str, Pose | None] = {s: None for s in SIDES}
        self.joint_goals: dict[str, np.ndarray] = {}
        self._lift_adr = int(self.ik.model.joint(self.profile.lift_joint).qposadr[0])

    # -- inputs ---------------------------------------------------------------

    def on_joint_states(self, msg: Mapping[str, Any]) -> None:
        """Raises MessageError when names are not exactly the 14 arm joints."""
        require_joint_names(msg["names"], self.names)
        self.joint_stamp_ns = int(msg["stamp_ns"])
        self.measured = dict(zip(msg["names"], (float(v) for v in msg["position"])))
        if not self.initialized and self.lift_joint is not None:
            q = dict(zip(msg["names"], (float(v) for v in msg["position"])))
            self.ik.reset(q, lift_joint=self.lift_joint)
            for s in SIDES:
                lo, hi = self.ik.gripper_range(s)
                self.gripper_ref[s] = float(np.clip(q[self.profile.arms[s].gripper], lo, hi))
            self.initialized = True

    def on_lift(self, msg: Mapping[str, Any]) -> None:
        self.lift_joint = self.profile.lift_height_to_joint(float(msg["height_m"]))
        if self.initialized:
            self.ik.set_lift(self.lift_joint)

    def on_targets(self, msg: Mapping[str, Any], now_ns: int) -> bool:
        """Stores new targets; True when a solve should run now (rate cap)."""
        if msg["frame_id"] != self.profile.base_frame:
            raise MessageError(f"arm_targets.frame_id must be {self.profile.base_frame!r}, got {msg['frame_id']!r}")
        self.targets = msg
        self.targets_received_ns = now_ns
        self.targets_invalid = ""
        for s in SIDES:
            if self.homing[s] and msg[s]["enabled"]:
                self._stop_homing(s)  # the operator resumed this arm: their target wins
        if self.last_solve_ns is not None and now_ns - self.last_solve_ns < self.config.min_solve_spacing_s * 1e9:
            self.pending = True
            return False
        return True

    def on_invalid_targets(self, reason: str) -> None:
        """A rejected arm_targets message: both arms hold until a valid one arrives."""
        self.targets_invalid = reason

    def on_teleop_state(self, msg: Mapping[str, Any]) -> bool:
        """Takes the teleop state; True when it requested a reset (homing starts).

        The first state only sets the reset_count baseline, so a node that
        starts after a reset does not replay it; a lower count (teleop
        restarted) sets a new baseline. A latched e-stop stops homing and
        refuses a reset that arrives with it."""
        count = int(msg["reset_count"])
        if count < 0:
            raise MessageError(f"teleop_state.reset_count must be >= 0, got {count}")
        requested = self.reset_count is not None and count > self.reset_count
        self.reset_count = count
        if msg["estop_latched"]:
            for s in SIDES:
                if self.homing[s]:
                    self._stop_homing(s)
            return False
        if requested:
            self.resets += 1
            for s in SIDES:
                self.homing[s] = True
                self.home_limiters[s] = CartesianSpeedLimiter(self.home_limiters[s].config)  # restarts at the first homing step
                self.home_grip_since_ns[s], self.home_ramp[s] = None, None
                self.home_route[s], self.home_planner[s] = [], None
        return requested

    def _stop_homing(self, side: str) -> None:
        """Ends homing for one arm; its normal speed limiter restarts from
        wherever the arm is when it next tracks a target."""
        self.homing[side] = False
        self.homing_since_ns[side] = None
        self.arms[side].was_active = False

    def home_grip_poses(self) -> dict[str, Pose]:
        """Grip poses of the home arm configuration at the IK's current lift."""
        height = self.profile.lift_joint_to_height(float(self.ik.configuration.q[self._lift_adr]))
        names = list(self.home_q)
        grips = self.home_kinematics.grips(names, [self.home_q[n] for n in names], height)
        return {s: Pose.of(p, matrix_to_quat(r)) for s, (p, r) in grips.items()}

    def _at_home(self, side: str) -> bool:
        q_ref = dict(zip(self.ik.arm_joint_names, self.ik.reference.q))
        tol = self.config.home_tolerance_rad
        return all(abs(q_ref[j] - self.home_q[j]) <= tol for j in self.profile.arms[side].joints)

    def tick_due(self, now_ns: int) -> bool:
        return self.last_solve_ns is None or now_ns - self.last_solve_ns >= 0.9 * self.period_ns

    # -- one solve ------------------------------------------------------------

    def _arm_target(self, side: str, now_ns: int, dt: float) -> Pose | None:
        """This step's target for one arm (None: it holds); its unshaped goal
        is left in ``self.goals``."""
        self.goals[side] = None
        self.joint_goals.pop(side, None)
        target = self._shaped_target(side, now_ns, dt)
        if target is not None and self.goals[side] is None:
            self.goals[side] = target
        return target

    def _shaped_target(self, side: str, now_ns: int, dt: float) -> Pose | None:
        arm = self.arms[side]
        if self.joint_stamp_ns is None or now_ns - self.joint_stamp_ns > self.config.joint_state_timeout_s * 1e9:
            arm.status = "stale_feedback"
            if self.homing[side]:
                self._stop_homing(side)  # never resumes by itself when feedback returns
            return None
        if self.homing[side]:
            lo, hi = self.ik.gripper_range(side)
            self.gripper_ref[side] = float(np.clip(self.home_q[self.profile.arms[side].gripper], lo, hi))
            since = self.homing_since_ns[side]
            if since is None:
                self.homing_since_ns[side] = since = now_ns
            if self._at_home(side):
                self._stop_homing(side)  # done: the arm holds (teleop keeps it paused)
            elif now_ns - since > self.config.home_timeout_s * 1e9:
                # home not reached in time (another joint branch, an obstacle):
                # hold where it is rather than keep pushing
                self._stop_homing(side)
                self.home_timeouts += 1
                arm.status = "home_timeout"
                return None
            elif self.home_ramp[side] is not None or self._home_grip_settled(side, now_ns):
                self._home_joint_step(side, dt)
                return None
            else:
                return self._home_target(side, dt)
        if self.targets is None or self.targets_received_ns is None:
            arm.status = "no_target"
            return None
        if self.targets_invalid:
            arm.status = "invalid_target"
            return None
        if now_ns - self.targets_received_ns > self.config.target_timeout_s * 1e9:
            arm.status = "stale_target"
            return None
        t = self.targets[side]
        if not t["enabled"]:
            arm.status = "disabled"
            return None
        pos = np.asarray(t["position"], dtype=float)
        if np.linalg.norm(pos) > self.workspace.max_target_distance_m:
            arm.status = "invalid_target"
            return None
        projected = self.limits.project(side, pos)
        arm.projection_m = projected.projection_m
        if not arm.was_active or not self.limiters[side].initialized:
            pose = self.ik.grip_pose(side)
            self.limiters[side].reset(pose.position, pose.orientation)
        self.goals[side] = Pose.of(projected.position, t["orientation"])
        shaped = self.limiters[side].step(projected.position, t["orientation"], dt, bool(t["slow"]))
        arm.rate_limited = shaped.rate_limited
        lo, hi = self.ik.gripper_range(side)
        self.gripper_ref[side] = float(np.clip(t["gripper"], lo, hi))
        arm.status = "ok"
        return Pose.of(shaped.position, shaped.orientation)

    def _home_target(self, side: str, dt: float) -> Pose:
        """This step's homing target: the home grip pose through the homing
        speed limiter (restarted from the current grip pose when homing began)."""
        arm = self.arms[side]
        home = self.home_grip_poses()[side]
        limiter = self.home_limiters[side]
        if not limiter.initialized:
            pose = self.ik.grip_pose(side)
            limiter.reset(pose.position, pose.orientation)
        self.goals[side] = home
        shaped = limiter.step(home.position, home.orientation, dt, False)
        arm.rate_limited = shaped.rate_limited
        arm.projection_m = 0.0
        arm.status = "homing"
        return Pose.of(shaped.position, shaped.orientation)

    def _home_grip_settled(self, side: str, now_ns: int) -> bool:
        """True once the homing grip target has rested on the home grip pose
        for ``home_settle_s`` (the local solve has done what it can)."""
        limiter = self.home_limiters[side]
        if not limiter.initialized or self.arms[side].rate_limited:
            self.home_grip_since_ns[side] = None
            return False
        if self.home_grip_since_ns[side] is None:
            self.home_grip_since_ns[side] = now_ns
        return now_ns - self.home_grip_since_ns[side] >= self.config.home_settle_s * 1e9

    def _home_joint_step(self, side: str, dt: float) -> None:
        """The second homing phase: the arm's joint goal moves from where the
        phase began along the route home, every joint of a leg arriving
        together, the farthest at ``home_joint_speed_rad_s``."""
        arm = self.arms[side]
        arm.projection_m, arm.status = 0.0, "homing"
        ramp = self.home_ramp[side]
        if ramp is None:
            self.home_ramp[side] = ramp = self.ik.reference.q[self.ik.joint_index(self.profile.arms[side].joints)].copy()
            if self.ik.fallback is not None:
                self.home_planner[side] = self.ik.fallback.home_route_planner(side, ramp, HOME_ROUTE_CHECKS)
            else:
                self.home_route[side] = [self.home_arm_q[side]]
        planner = self.home_planner[side]
        if planner is not None:
            if not planner.advance(HOME_ROUTE_CHECKS_PER_TICK):
                self.joint_goals[side], arm.rate_limited = ramp, False  # holds while planning
                return
            self.home_planner[side] = None
            if planner.route is None:
                # none found: the straight line; the rows keep the arm clear
                # and hold it short of home until the timeout
                self.home_routes_not_found += 1
            self.home_route[side] = list(planner.route or [self.home_arm_q[side]])
        step = self.config.home_joint_speed_rad_s * dt
        route = self.home_route[side]
        gap = route[0] - ramp
        largest = float(np.max(np.abs(gap)))
        if largest <= step:
            ramp = route[0].copy()
            if len(route) > 1:
                route.pop(0)  # a waypoint: on to the next leg from the next step
        else:
            ramp = ramp + gap * (step / largest)
        self.home_ramp[side] = ramp
        self.joint_goals[side] = ramp
        arm.rate_limited = largest > step

    def solve(self, now_ns: int) -> dict[str, Any] | None:
        """One control step; the JointCommands dict to publish (None while waiting)."""
        if not self.initialized:
            return None
        # the step is the real time since the last solve (solves are at least
        # min_solve_spacing_s apart), at most two periods: the caps hold in real
        # time, and a late solve after a stall does not make up for more than that
        elapsed = self.ik.dt if self.last_solve_ns is None else (now_ns - self.last_solve_ns) / 1e9
        dt = min(2.0 * self.ik.dt, max(elapsed, self.config.min_solve_spacing_s))
        targets = {s: self._arm_target(s, now_ns, dt) for s in SIDES}
        moving = {s: targets[s] is not None or s in self.joint_goals for s in SIDES}
        self._resync_holding_arms(moving, now_ns)
        result = self.ik.tick(targets, dt, goals=dict(self.goals), joint_goals=dict(self.joint_goals))
        for s in SIDES:
            self.arms[s].was_active = targets[s] is not None and result.status == "ok"
            if result.arrived.get(s):
                # the global fallback brought the arm to its goal in joint space:
                # the speed-shaped target continues from where the grip is
                pose = self.ik.grip_pose(s)
                (self.home_limiters if self.homing[s] else self.limiters)[s].reset(pose.position, pose.orientation)
            if result.status == "failed" and moving[s]:
                self.arms[s].status = "failed"
        self.last_solve_ns = now_ns
        self.pending = False
        self.last_result = result
        q = np.empty(len(self.names))
        dq = np.zeros(len(self.names))
        pos = {n: i for i, n in enumerate(self.names)}
        for i, n in enumerate(self.ik.arm_joint_names):
            q[pos[n]] = result.q[i]
            dq[pos[n]] = result.dq[i]
        for s in SIDES:
            q[pos[self.profile.arms[s].gripper]] = self.gripper_ref[s]
        return {"stamp_ns": int(now_ns), "names": self.names, "q_ref": q, "dq_ref": dq, "status": result.status}

    def _resync_holding_arms(self, moving: Mapping[str, bool], now_ns: int) -> None:
        """A holding arm whose fresh measurement is far from its reference
        (moved by hand, sagged with torque off) restarts from the measurement,
        so enabling it again does not jump back."""
        if self.joint_stamp_ns is None or now_ns - self.joint_stamp_ns > self.config.joint_state_timeout_s * 1e9:
            return
        q_ref = dict(zip(self.ik.arm_joint_names, self.ik.reference.q))
        for s in SIDES:
            if moving[s]:
                continue
            joints = self.profile.arms[s].joints
            if max(abs(self.measured[j] - q_ref[j]) for j in joints) > self.config.resync_threshold_rad:
                self.ik.resync_arm(s, self.measured)
                self.arms[s].was_active = False
                self.resyncs += 1

    def details(self) -> dict[str, Any]:
        r = self.last_result
        return {
            "initialized": self.initialized,
            "arms": {s: {"status": a.status, "projection_m": round(a.projection_m, 6), "rate_limited": a.rate_limited}
                     for s, a in self.arms.items()},
            "solves": self.ik.solves,
            "failed_solves": self.ik.failures,
            "guard_shortened": self.ik.guard_shortened,
            "guard_per_arm": self.ik.guard_per_arm,  # of those, steps each arm kept its own share of
            # per arm and solve: goal followed / braked instead / plan kept; plans the guard refused
            "reference_modes": dict(self.ik.reference.counts),
            "plans_refused": self.ik.plans_refused,
            "resyncs": self.resyncs,
            "resets": self.resets,
            "global_search": self.ik.fallback.details() if self.ik.fallback is not None else {},
            "homing": dict(self.homing),
            "home_timeouts": self.home_timeouts,
            "home_routes_not_found": self.home_routes_not_found,
            "last_status": r.status if r else "",
            "last_error": r.error if r else "",
        }
