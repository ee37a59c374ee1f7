"""ik node: arm targets -> guarded joint references for both arms.

Inputs: ``arm_targets`` (ArmTargets, grip targets in base_link), ``joint_states``
(JointState of the 14 arm + gripper joints), ``lift`` (LiftState) and ``tick``
(dora timer, e.g. dora/timer/millis/10).
Outputs: ``joint_commands`` (JointCommands: the 14 joints' q_ref, feedforward
dq_ref, status "ok" / "hold" / "failed") and ``diagnostics``.

The reference starts from the first valid joint state (and lift state) and is
then integrated by the IK itself. A new arm_targets is solved at once unless a
solve already ran within the last control period (then the next tick solves);
ticks keep solving towards the last targets. An arm holds when it is disabled,
its target is invalid or stale, or the joint feedback is stale; a failed QP
holds both arms on the last good reference with zero feedforward. A holding
arm measured farther than ``resync_threshold_rad`` from its reference (moved by
hand, sagged with torque off) restarts its reference from the measurement.

Args: ``--config`` IK YAML (default: shipped alohamini2/ik.yaml).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import yaml

from teledora import models
from teledora.nodes.dora_io import NodeIO, make_node, newest_per_input, node_id
from teledora.operators.ik_solver import SIDES, BimanualIk, GripTarget, IkSettings, TickResult, build_ik_model
from teledora.operators.messages import MessageError, require_joint_names
from teledora.operators.robot_profile import RobotProfile
from teledora.operators.workspace_limits import CartesianSpeedLimiter, WorkspaceConfig, WorkspaceLimits


@dataclass(frozen=True)
class IkNodeConfig:
    joint_state_timeout_s: float
    target_timeout_s: float
    diagnostics_period_s: float
    resync_threshold_rad: float

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "IkNodeConfig":
        return cls(float(data["joint_state_timeout_s"]), float(data["target_timeout_s"]),
                   float(data["diagnostics_period_s"]), float(data["resync_threshold_rad"]))


@dataclass
class ArmState:
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
        if self.last_solve_ns is not None and now_ns - self.last_solve_ns < 0.9 * self.period_ns:
            self.pending = True
            return False
        return True

    def on_invalid_targets(self, reason: str) -> None:
        """A rejected arm_targets message: both arms hold until a valid one arrives."""
        self.targets_invalid = reason

    def tick_due(self, now_ns: int) -> bool:
        return self.last_solve_ns is None or now_ns - self.last_solve_ns >= 0.9 * self.period_ns

    # -- one solve ------------------------------------------------------------

    def _arm_target(self, side: str, now_ns: int, dt: float) -> GripTarget | None:
        arm = self.arms[side]
        if self.joint_stamp_ns is None or now_ns - self.joint_stamp_ns > self.config.joint_state_timeout_s * 1e9:
            arm.status = "stale_feedback"
            return None
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
        shaped = self.limiters[side].step(projected.position, t["orientation"], dt, bool(t["slow"]))
        arm.rate_limited = shaped.rate_limited
        lo, hi = self.ik.gripper_range(side)
        self.gripper_ref[side] = float(np.clip(t["gripper"], lo, hi))
        arm.status = "ok"
        return GripTarget.of(shaped.position, shaped.orientation)

    def solve(self, now_ns: int) -> dict[str, Any] | None:
        """One control step; the JointCommands dict to publish (None while waiting)."""
        if not self.initialized:
            return None
        # the step is the real time since the last solve (solves are at least
        # 0.9 periods apart), at most two periods: the caps hold in real time,
        # and a late solve after a stall does not make up for more than that
        elapsed = self.ik.dt if self.last_solve_ns is None else (now_ns - self.last_solve_ns) / 1e9
        dt = min(2.0 * self.ik.dt, max(elapsed, 0.5 * self.ik.dt))
        targets = {s: self._arm_target(s, now_ns, dt) for s in SIDES}
        self._resync_holding_arms(targets, now_ns)
        result = self.ik.tick(targets, dt)
        for s in SIDES:
            self.arms[s].was_active = targets[s] is not None and result.status == "ok"
            if result.status == "failed" and targets[s] is not None:
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

    def _resync_holding_arms(self, targets: Mapping[str, GripTarget | None], now_ns: int) -> None:
        """A holding arm whose fresh measurement is far from its reference
        (moved by hand, sagged with torque off) restarts from the measurement,
        so enabling it again does not jump back."""
        if self.joint_stamp_ns is None or now_ns - self.joint_stamp_ns > self.config.joint_state_timeout_s * 1e9:
            return
        q_ref = dict(zip(self.ik.arm_joint_names, self.ik.reference.q))
        for s in SIDES:
            if targets[s] is not None:
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
            "resyncs": self.resyncs,
            "last_status": r.status if r else "",
            "last_error": r.error if r else "",
        }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="ik", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="IK YAML (default: shipped alohamini2/ik.yaml)")
    return ap.parse_args(argv)


def build_loop(config_path: Path | None) -> IkLoop:
    if config_path is None:
        data = models.load_yaml("alohamini2/ik.yaml")
    else:
        with open(config_path) as f:
            data = yaml.safe_load(f) or {}
    settings = IkSettings.from_mapping(data)
    profile = models.load_profile()
    ik = BimanualIk(build_ik_model(models.path(settings.solver.model), settings.solver.add_floor), profile, settings)
    return IkLoop(ik, WorkspaceConfig.from_mapping(data["workspace"]), IkNodeConfig.from_mapping(data["node"]), profile)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    loop = build_loop(args.config)
    io = NodeIO(make_node(node), node_id("ik"), clock, journal=True)
    io.diag.period_ns = int(loop.config.diagnostics_period_s * 1e9)

    def publish(now: int) -> None:
        cmd = loop.solve(now)
        if cmd is None:
            return
        meta = {f"{s}_status": loop.arms[s].status for s in SIDES}
        io.send("joint_commands", "JointCommands", cmd, meta)

    while (batch := io.next_batch()) is not None:
        for event in newest_per_input(batch, {"tick", "joint_states", "lift", "arm_targets"}):
            if event["type"] != "INPUT":
                continue  # STOP / INPUT_CLOSED: keep draining until the stream ends
            eid = event["id"]
            if eid == "joint_states":
                msg = io.decode(event, "JointState")
                if msg is not None:
                    try:
                        loop.on_joint_states(msg)
                    except MessageError as exc:
                        io.reject(f"joint_states: {exc}")
            elif eid == "lift":
                msg = io.decode(event, "LiftState")
                if msg is not None:
                    loop.on_lift(msg)
            elif eid == "arm_targets":
                msg = io.decode(event, "ArmTargets")
                if msg is None:
                    loop.on_invalid_targets(io.diag.last_error)
                else:
                    now = io.now()
                    try:
                        if loop.on_targets(msg, now):
                            publish(now)
                    except MessageError as exc:
                        io.reject(f"arm_targets: {exc}")
                        loop.on_invalid_targets(str(exc))
            elif eid == "tick":
                now = io.now()
                if loop.tick_due(now):
                    publish(now)
            else:
                io.reject(f"unexpected input {eid!r}")
        io.diag.details.update(loop.details())
        if not loop.initialized:
            io.diag.set_status("warn", "waiting for joint_states and lift")
        elif loop.last_result is not None and loop.last_result.status == "failed":
            io.diag.set_status("error", loop.last_result.error)
        elif any(a.status != "ok" for a in loop.arms.values()):
            io.diag.set_status("warn", ", ".join(f"{s}: {a.status}" for s, a in loop.arms.items()))
        else:
            io.diag.set_status("ok", "")
        io.publish_diagnostics()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
