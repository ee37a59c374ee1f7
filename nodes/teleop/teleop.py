"""teleop node: XR controller reports -> arm targets, base and lift commands,
and the IK's guarded joint references, in one process.

The teleop scheme (operators/teleop/teleop_scheme.py) and the IK loop
(operators/ik/ik_loop.py) run here one after the other: each step's arm
targets and teleop state go straight into the IK loop, so a headset report
reaches the solve without a dora hop between them.

Inputs: ``controllers`` (XrControllers), ``joint_states`` (JointState of the 14
arm + gripper joints), ``lift`` (LiftState) and ``tick`` (dora timer at the
IK's control period, ik.yaml ``solver.control_period_s``: 10 ms). The joint and
lift states anchor the scheme's arms (MuJoCo forward kinematics, run only for a
step that anchors or holds an arm; arms stay disabled until both arrived) and
start and correct the IK's reference.
Outputs: ``arm_targets``, ``base_cmd``, ``lift_cmd``, ``state`` (the scheme's,
recorded as the dataset's action), ``joint_commands`` (JointCommands: the 14
joints' q_ref, feedforward dq_ref, status "ok" / "hold" / "failed"; per-arm
reasons in the metadata ``left_status`` / ``right_status``), ``journal`` (one
InputJournal of every input, see teledora/runtime/node_journal.py) and
``diagnostics`` (the IK's figures under ``details.ik``).

Outputs carry dora metadata ``xr_seq`` / ``xr_stamp_ns``: the newest XR report
they reflect (latency tracing). Every controller report is applied in order
(button edges must not be lost) and gets a step of its own, published with its
``xr_seq``, except when it is superseded within the same batch: by a report
stamped less than ``node.burst_spacing_s`` (4 ms, under half a 120 Hz
frame) after it (a sender catching up in a burst), or by
``node.max_steps_per_batch`` (3) newer reports (a backlog, which thus
collapses instead of growing). A tick republishes the scheme's outputs only
when no step went out for ``node.republish_s`` (50 ms). Of a step's outputs,
``base_cmd``, ``lift_cmd`` and ``state`` go out only when they differ from the
last sent (the stamp aside) or ``node.keepalive_s`` (0.1 s; 0: every step) has
passed since: their receivers hold the newest value
(operators/teleop/change_gate.py; counts in diagnostics ``unchanged_held``).
``arm_targets`` goes out with every step. Of the joint and lift states in a
batch only the newest valid one is decoded and applied (an invalid newest one
does not hide the valid one before it); forward kinematics runs lazily once
per change.

The IK: every step hands the loop the scheme's state (reset requests, the
e-stop) and then its arm targets, solved at once unless a solve ran within
the last ``min_solve_spacing_s`` (then the next tick solves); ticks keep
solving towards the last targets. An arm holds when it is disabled, its target
is invalid or stale, or the joint feedback is stale; a failed QP holds both
arms on the last good reference with zero feedforward. A holding arm measured
farther than ``resync_threshold_rad`` from its reference restarts its
reference from the measurement. Each increase of the scheme's ``reset_count``
homes both arms through the IK (status "homing").

A learned policy (nodes/policy) may propose commands on the optional inputs
``policy_arm_targets``, ``policy_base_cmd`` and ``policy_lift_cmd`` (newest
only). Every controller report and every step without one goes to the selector
(operators/policy/authority.py) with the scheme's e-stop latch; its driver
picks what goes on (operators/policy/drive_select.py): the scheme's commands,
the policy's (its arm targets into the IK like the scheme's, base and lift
within the scheme's caps; the scheme's arms stay clutched meanwhile and
re-anchor when the operator takes over), or none (arms held, base and lift at
zero). A fresh policy command steps at once while the policy holds authority.
``state.driver`` and diagnostics ``details.driver`` / ``details.authority`` say
who drives. Without those inputs the operator always drives.

The ``node.*`` values are teleop.yaml's ``node`` section.

Args: ``--config`` teleop YAML (default: the shipped alohamini2/teleop.yaml),
``--ik-config`` IK YAML (default: the shipped alohamini2/ik.yaml),
``--model`` MJCF for forward kinematics (default: the profile's model),
``--keepalive-s`` overrides ``node.keepalive_s``.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import mujoco
import numpy as np
from teledora import models
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.ik.lift_guard import LiftGuard
from teledora.operators.ik.grip_kinematics import GripKinematics
from teledora.operators.ik.ik_loop import IkLoop
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.contract.messages import MessageError, require_joint_names
from teledora.operators.model.robot_profile import RobotProfile
from teledora.operators.geometry import Pose, matrix_to_quat
from teledora.operators.model.sides import SIDES
from teledora.operators.errors import ConfigError
from teledora.operators.teleop.change_gate import ChangeGate
from teledora.operators.policy.authority import OPERATOR, POLICY, STOPPED, Authority, Decision
from teledora.operators.policy.drive_select import DriveCaps, PolicyCommands, select
from teledora.operators.teleop.teleop_scheme import TeleopScheme
from teledora.models.config_files import load_ik_config, load_teleop_config

_OUTPUTS = (("arm_targets", "ArmTargets"), ("base_cmd", "BaseCommand"), ("lift_cmd", "LiftCommand"), ("state", "TeleopState"))
# sent when they change or once a keep-alive period (operators/teleop/change_gate.py);
# arm targets go out with every step
_GATED = frozenset({"base_cmd", "lift_cmd", "state"})
# a learned policy's proposals (nodes/policy), optional: name -> (command, kind)
_POLICY_INPUTS = {"policy_arm_targets": ("arm_targets", "ArmTargets"), "policy_base_cmd": ("base_cmd", "BaseCommand"),
                  "policy_lift_cmd": ("lift_cmd", "LiftCommand")}


class RobotGrips:
    """The robot's current grip poses in base_link, from the newest valid arm joint
    state and lift state (forward kinematics computed lazily, once per change).

    Args:
        model_path: MJCF with the profile's arm joints, lift joint and grip sites.
        profile: The robot profile (joint names, lift offset, base frame, grip sites).
    """

    def __init__(self, model_path: Path, profile: RobotProfile) -> None:
        self.profile = profile
        self._kin = GripKinematics(mujoco.MjModel.from_xml_path(str(model_path)), profile)
        self._names: list[str] | None = None
        self._positions: np.ndarray | None = None
        self._lift_m: float | None = None
        self._grips: dict[str, Pose | None] = dict.fromkeys(SIDES)
        self._dirty = False

    @property
    def known(self) -> bool:
        return self._names is not None and self._lift_m is not None

    def set_joints(self, names: Sequence[str], positions: np.ndarray) -> None:
        """Keeps a joint state; rejected whole (MessageError) unless it names exactly the arm joints."""
        require_joint_names(names, self.profile.arm_joint_names)
        self._names, self._positions, self._dirty = list(names), np.array(positions, dtype=float), True

    def set_lift_height(self, height_m: float) -> None:
        self._lift_m = float(height_m)

    @property
    def lift_m(self) -> float:
        return self._lift_m or 0.0

    def grips(self) -> dict[str, Pose | None]:
        """Grip poses on the lift carriage (base_link with the lift at height 0);
        None for both until a joint state and a lift state arrived."""
        if not self.known:
            return dict.fromkeys(SIDES)
        if self._dirty:
            for side, (p, r) in self._kin.grips(self._names, self._positions, 0.0).items():
                self._grips[side] = Pose(np.array(p), matrix_to_quat(r))
            self._dirty = False
        return dict(self._grips)


class LazyGrips(Mapping):
    """The robot's grip poses for one step, computed (forward kinematics, when
    the joint or lift state changed) only if the scheme reads them: an arm
    that tracks the controller needs no grip pose."""

    def __init__(self, kin: RobotGrips) -> None:
        self._kin = kin
        self._grips: dict[str, Pose | None] | None = None

    def _all(self) -> dict[str, Pose | None]:
        if self._grips is None:
            self._grips = self._kin.grips()
        return self._grips

    def __getitem__(self, side: str) -> Pose | None:
        return self._all()[side]

    def __iter__(self) -> Iterator[str]:
        return iter(SIDES)

    def __len__(self) -> int:
        return len(SIDES)


def apply_newest_valid(io: NodeIO, kin: RobotGrips, robot_state: dict[str, list], loop: IkLoop | None = None) -> None:
    """Applies the newest valid joint and lift state of a batch to the grips
    and the IK loop; older ones are skipped unread (only the newest matters),
    invalid newer ones are counted and passed over."""
    # the lift first: the IK starts its reference from a joint state once it knows the lift
    for event in reversed(robot_state["lift"]):
        msg = io.decode(event, "LiftState")
        if msg is not None:
            kin.set_lift_height(msg["height_m"])
            if loop is not None:
                loop.on_lift(msg)
            break
    for event in reversed(robot_state["joint_states"]):
        msg = io.decode(event, "JointState")
        if msg is None:
            continue
        try:
            kin.set_joints(msg["names"], msg["position"])
            if loop is not None:
                loop.on_joint_states(msg)
            break
        except MessageError as exc:
            io.reject(f"joint_states: {exc}")


def build_ik_loop(config_path: Path | None) -> IkLoop:
    """The IK loop of ik.yaml (default: the shipped one) for the profile's robot."""
    config = load_ik_config(config_path)
    profile = models.load_profile()
    model = build_ik_model(models.path(config.solver.model), config.solver.add_floor)
    return IkLoop(BimanualIk(model, profile, config.settings), config.workspace, config.node, profile)


class IkStage:
    """The IK half of the node: takes the scheme's state and arm targets in
    process, solves, and sends ``joint_commands``.

    Args:
        io: The node's NodeIO (sending, rejecting, diagnostics).
        loop: The IK loop (operators/ik/ik_loop.py).
    """

    def __init__(self, io: NodeIO, loop: IkLoop) -> None:
        self.io = io
        self.loop = loop

    def solve(self, now_ns: int, trace: Mapping[str, int] | None = None) -> None:
        cmd = self.loop.solve(now_ns)
        if cmd is None:
            return
        meta = {f"{s}_status": self.loop.arms[s].status for s in SIDES}
        meta.update(trace or {})
        self.io.send("joint_commands", "JointCommands", cmd, meta)

    def on_step(self, state: Mapping[str, Any], targets: Mapping[str, Any], now_ns: int,
                trace: Mapping[str, int] | None = None) -> None:
        """One step of the scheme: its state first (a latched e-stop stops
        homing before the targets are taken), then its targets."""
        self.on_state(state)
        self.on_targets(targets, now_ns, trace)

    def on_state(self, state: Mapping[str, Any]) -> None:
        try:
            self.loop.on_teleop_state(state)
        except MessageError as exc:
            self.io.reject(f"state: {exc}")

    def on_targets(self, targets: Mapping[str, Any], now_ns: int, trace: Mapping[str, int] | None = None) -> None:
        """Takes arm targets and solves at once unless a solve ran too recently;
        targets that are not finite or in another frame are rejected and both
        arms hold until valid ones come."""
        try:
            for side in SIDES:
                t = targets[side]
                if not (np.all(np.isfinite(t["position"])) and np.all(np.isfinite(t["orientation"])) and np.isfinite(t["gripper"])):
                    raise MessageError(f"arm_targets.{side}: NaN or infinite value")
            if self.loop.on_targets(targets, now_ns):
                self.solve(now_ns, trace)
        except MessageError as exc:
            self.io.reject(f"arm_targets: {exc}")
            self.loop.on_invalid_targets(str(exc))

    def on_tick(self, now_ns: int, trace: Mapping[str, int] | None = None) -> None:
        if self.loop.tick_due(now_ns):
            self.solve(now_ns, trace)

    def refresh(self) -> tuple[str, str]:
        """The loop's figures into diagnostics (``details.ik``); the IK's level and message."""
        loop = self.loop
        self.io.diag.details["ik"] = loop.details()
        if not loop.initialized:
            return "warn", "ik waiting for joint_states and lift"
        if loop.last_result is not None and loop.last_result.status == "failed":
            return "error", loop.last_result.error
        # an arm the operator does not drive (disabled, no target yet) is no fault
        if any(a.status not in ("ok", "homing", "disabled", "no_target") for a in loop.arms.values()):
            return "warn", ", ".join(f"{s}: {a.status}" for s, a in loop.arms.items())
        return "ok", ""


def stepped_reports(stamps: Sequence[int], burst_spacing_ns: int, max_steps: int) -> list[bool]:
    """Which reports of a batch (stamps in arrival order) get a step of their own:
    the newest always; an earlier one unless the report after it is stamped
    less than ``burst_spacing_ns`` later, and only among the newest ``max_steps``."""
    n = len(stamps)
    keep = [i == n - 1 or stamps[i + 1] - stamps[i] >= burst_spacing_ns for i in range(n)]
    for i in range(max(0, n - max(1, max_steps))):
        keep[i] = False
    return keep


_LEVELS = ("ok", "warn", "error")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="teleop", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="teleop YAML (default: shipped alohamini2/teleop.yaml)")
    ap.add_argument("--ik-config", type=Path, default=None, help="IK YAML (default: shipped alohamini2/ik.yaml)")
    ap.add_argument("--model", type=Path, default=None, help="MJCF for forward kinematics")
    # the node's tuning is teleop.yaml's node section; this flag overrides one key of it
    ap.add_argument("--keepalive-s", type=float, default=None, help="overrides node.keepalive_s")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    profile = models.load_profile()
    config = load_teleop_config(args.config, profile)
    scheme = TeleopScheme(config)
    tuning = config.node
    kin = RobotGrips(args.model or models.path(profile.model), profile)
    loop = build_ik_loop(args.ik_config)
    io = NodeIO(make_node(node), node_id("teleop"), clock, journal=True)
    io.diag.period_ns = int(loop.config.diagnostics_period_s * 1e9)
    ik = IkStage(io, loop)
    try:
        gate = ChangeGate(tuning.keepalive_s if args.keepalive_s is None else args.keepalive_s)
    except ConfigError as exc:
        io.fail_start("teleop", exc)
    last_publish_ns = -(10**18)
    republish_ns = int(tuning.republish_s * 1e9)
    trace: dict[str, int] = {}  # the XR report behind these outputs, for latency tracing
    authority = Authority()
    policy = PolicyCommands()
    caps = DriveCaps(config.max_speed_m_s, config.max_yaw_rate_rad_s, config.max_lift_speed_m_s)
    decision = Decision(OPERATOR, OPERATOR, "operator has authority")
    authority_events: list[str] = []  # the selector's events since the last step went out
    collision = loop.ik.settings.collision
    lift_guard = LiftGuard(loop.ik.model, profile.lift_joint, collision.minimum_distance_m, collision.lift_guard_horizon_s,
                           collision.lift_guard_latency_s)
    lift_guarded = 0

    def guard_lift(cmd: Mapping[str, Any]) -> Mapping[str, Any]:
        """The lift command (the operator's or the policy's), slowed or stopped
        where its motion would carry an arm within the IK's clearance of the body."""
        nonlocal lift_guarded
        v = float(cmd["velocity_m_s"])
        if v == 0.0:
            return cmd
        bounds = lift_guard.bounds(loop.ik.configuration.q, abs(v))
        used = min(max(v, bounds.down), bounds.up)
        if used == v:
            return cmd
        lift_guarded += 1
        io.diag.details.update(lift_guarded=lift_guarded, lift_guard_nearest=bounds.nearest)
        return dict(cmd, velocity_m_s=used)

    def decide(now_ns: int, report: Mapping[str, Any] | None) -> None:
        """The selector's decision for this report or tick; the scheme keeps the
        arms clutched while the policy holds authority."""
        nonlocal decision
        decision = authority.step(now_ns, estop_latched=scheme.estop_latched, controllers=report,
                                  policy_stamp_ns=policy.take_stamp())
        authority_events.extend(decision.events)
        scheme.yield_arms(decision.holder == POLICY)

    def publish(now_ns: int) -> None:
        nonlocal last_publish_ns
        out = scheme.step(now_ns, LazyGrips(kin), kin.lift_m)
        chosen = select(decision, out.arm_targets, out.base_cmd, out.lift_cmd, policy, caps, now_ns)
        chosen = dataclasses.replace(chosen, lift_cmd=guard_lift(chosen.lift_cmd))
        state = dict(out.state, driver=decision.driver, events=out.state["events"] + authority_events)
        authority_events.clear()
        sent = {"arm_targets": chosen.arm_targets, "base_cmd": chosen.base_cmd, "lift_cmd": chosen.lift_cmd, "state": state}
        for output, kind in _OUTPUTS:
            msg = sent[output]
            # a state that carries events always goes out: the same event twice is two events
            if output in _GATED and not gate.passes(output, msg, now_ns, news=output == "state" and bool(msg["events"])):
                continue
            io.send(output, kind, msg, dict(trace))
        last_publish_ns = now_ns
        if state["events"]:
            io.diag.details["last_events"] = state["events"][-8:]
        ik.on_step(state, chosen.arm_targets, now_ns, trace)

    def refresh() -> None:  # the scheme's and the IK's state into diagnostics, when a snapshot goes out
        io.diag.details.update(
            estop_latched=scheme.estop_latched, release_armed=scheme.release_armed, arms_paused=scheme.arms_paused, reset_count=scheme.reset_count,
            robot_state_known=kin.known, reports_folded=dict(folded), unchanged_held=dict(gate.held),
            rejected_future_reports=scheme.rejected_future_reports,
            driver=decision.hud(), authority=authority.details(),
        )
        level = "warn" if scheme.estop_latched or not kin.known else "ok"
        message = "e-stop latched" if scheme.estop_latched else ("no joint/lift state yet" if not kin.known else "")
        if decision.driver == STOPPED and not scheme.estop_latched:  # the policy holds authority but is stale
            level, message = "warn", decision.hud()
        ik_level, ik_message = ik.refresh()
        if _LEVELS.index(ik_level) > _LEVELS.index(level):
            level = ik_level
        io.diag.set_status(level, "; ".join(m for m in (message, ik_message) if m))

    burst_spacing_ns = int(tuning.burst_spacing_s * 1e9)
    folded = {"burst": 0, "backlog": 0}  # reports applied without a step of their own, by cause
    while (batch := io.next_batch()) is not None:
        ticked = False
        reports: list[dict[str, Any]] = []
        robot_state: dict[str, list] = {"joint_states": [], "lift": []}
        policy_news = False
        for event in io.newest(batch, {"tick", *_POLICY_INPUTS}):
            if event["type"] != "INPUT":
                continue  # STOP / INPUT_CLOSED: keep draining until the stream ends
            eid = event["id"]
            if eid == "controllers":
                msg = io.decode(event, "XrControllers")
                if msg is not None:
                    reports.append(msg)
            elif eid == "tick":
                ticked = True
            elif eid in robot_state:
                robot_state[eid].append(event)
            elif eid in _POLICY_INPUTS:
                name, kind = _POLICY_INPUTS[eid]
                msg = io.decode(event, kind)
                if msg is not None:
                    policy.on_command(name, msg)
                    policy_news = True
            else:
                io.reject(f"unexpected input {eid!r}")
        apply_newest_valid(io, kin, robot_state, loop)
        if reports:
            steps = stepped_reports([int(m["stamp_ns"]) for m in reports], burst_spacing_ns, tuning.max_steps_per_batch)
            backlog = max(0, len(steps) - max(1, tuning.max_steps_per_batch))
            folded["backlog"] += backlog
            folded["burst"] += steps[backlog:].count(False)
            for msg, step in zip(reports, steps):
                refused = scheme.rejected_future_reports
                now = io.now()
                scheme.on_controllers(msg, now)
                for _ in range(scheme.rejected_future_reports - refused):
                    io.reject("controllers: a hand's stamp lies beyond future_stamp_tolerance_s ahead (not applied)")
                # every report, stepped or folded, goes to the selector: a takeover in it counts that very step
                decide(now, msg)
                trace.update(xr_seq=int(msg["seq"]), xr_stamp_ns=int(msg["stamp_ns"]))
                if step:
                    publish(io.now())
            if ticked:
                ik.on_tick(io.now(), trace)
        elif ticked or policy_news:
            now = io.now()
            before = decision.driver
            decide(now, None)
            # a fresh policy command steps at once while the policy has authority;
            # a change of driver (the policy gone stale) goes out at once too
            if (policy_news and decision.holder == POLICY) or decision.driver != before or now - last_publish_ns >= republish_ns:
                publish(now)
            if ticked:
                ik.on_tick(now, trace)
        io.publish_diagnostics(refresh=refresh)
    io.publish_diagnostics(force=True, refresh=refresh)


if __name__ == "__main__":
    main()
