"""The IK half of the teleop node (IkStage) with dora.testing.MockNode: start-up,
tracking, holds, rejection, rate cap, homing on a teleop reset request.

The scheme's targets and state are handed to the stage as the node does, in
process; the test feeds them as timed events so that each can be placed
among joint states and ticks."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora import models
from teledora.nodes.teleop import teleop
from teledora.runtime.node_io import NodeIO
from teledora.operators.contract.messages import decode, encode, schema

PROFILE = models.load_profile()
ARM = list(PROFILE.arm_joint_names)
HOME = PROFILE.home_q()
MS = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class SteppedNode(MockNode):
    """Delivers one event per batch and moves the clock to each event's time."""

    def __init__(self, timed_inputs, clock: Clock) -> None:
        super().__init__([(i, v) for _, i, v in timed_inputs])
        self._times = [t for t, _, _ in timed_inputs]
        self._clock = clock
        self.command_metadata: list[dict] = []

    def send_output(self, output_id, data, metadata=None):
        if output_id == "joint_commands":
            self.command_metadata.append(dict(metadata or {}))
        return super().send_output(output_id, data, metadata)

    def next(self, timeout=None):
        ev = super().next(timeout)
        if ev is not None and ev.get("type") == "INPUT" and self._times:
            self._clock.now = self._times.pop(0)
        return ev

    def drain(self):
        return []


def joints(t_ns: int, q: dict | None = None, names=None) -> pa.Array:
    q = q or HOME
    names = names or ARM
    return encode("JointState", dict(stamp_ns=t_ns, names=names, position=[q.get(n, 0.0) for n in names], velocity=[], effort=[]))


def lift(t_ns: int, h: float = 0.3) -> pa.Array:
    return encode("LiftState", dict(stamp_ns=t_ns, height_m=h, velocity_m_s=0.0, homed=True))


def arm(position, enabled=True, gripper=0.3, slow=False, orientation=None) -> dict:
    return dict(enabled=enabled, position=list(position), orientation=list(orientation or GRIP_QUAT), gripper=gripper, slow=slow)


def targets(t_ns: int, left: dict, right: dict, frame_id: str = "base_link") -> pa.Array:
    return encode("ArmTargets", dict(stamp_ns=t_ns, frame_id=frame_id, left=left, right=right))


def tick() -> pa.Array:
    return pa.array([0], type=pa.uint64())


_LOOP = teleop.build_ik_loop(None)
GRIP_POS = {s: _LOOP.ik.grip_pose(s).position for s in ("left", "right")}
GRIP_QUAT = list(_LOOP.ik.grip_pose("left").orientation)


def teleop_state(t_ns: int, reset_count: int, estop: bool = False) -> pa.Array:
    return encode("TeleopState", dict(stamp_ns=t_ns, estop_latched=estop, release_armed=False, arms_paused=True,
                                      left_clutched=False, right_clutched=False, left_slow=False, right_slow=False, left_pinch="full",
                                      right_pinch="full", reset_count=reset_count, events=[]))


def run_ik(node, clock) -> None:
    """The teleop node's IK path: joint and lift states through the node's
    own newest-valid step, the scheme's state and targets (rows as the scheme
    builds them, unchecked) and ticks to the stage, diagnostics as the node
    publishes them."""
    io = NodeIO(node, "teleop", clock)
    loop = teleop.build_ik_loop(None)
    stage = teleop.IkStage(io, loop)
    kin = teleop.RobotGrips(models.path(PROFILE.model), PROFILE)
    io.diag.period_ns = int(loop.config.diagnostics_period_s * 1e9)

    def refresh() -> None:
        io.diag.set_status(*stage.refresh())

    while (batch := io.next_batch()) is not None:
        robot_state: dict[str, list] = {"joint_states": [], "lift": []}
        for event in batch:
            if event["type"] == "INPUT" and event["id"] in robot_state:
                robot_state[event["id"]].append(event)
        teleop.apply_newest_valid(io, kin, robot_state, loop)
        for event in batch:
            if event["type"] != "INPUT":
                continue
            eid = event["id"]
            if eid == "teleop_state":
                stage.on_state(event["value"].to_pylist()[0])
            elif eid == "arm_targets":
                stage.on_targets(event["value"].to_pylist()[0], io.now())
            elif eid == "tick":
                stage.on_tick(io.now())
        io.publish_diagnostics(refresh=refresh)
    io.publish_diagnostics(force=True, refresh=refresh)


def run_node(timed_inputs):
    clock = Clock()
    node = SteppedNode(timed_inputs, clock)
    run_ik(node, clock)
    cmds = [decode("JointCommands", a) for a in node.outputs.get("joint_commands", [])]
    diags = [decode("Diagnostics", a) for a in node.outputs.get("diagnostics", [])]
    return cmds, diags, node.command_metadata


def run(timed_inputs):
    cmds, diags, _ = run_node(timed_inputs)
    return cmds, diags


def ik_details(diag: dict) -> dict:
    return json.loads(diag["details_json"])["ik"]


def fk(q_ref: np.ndarray, names) -> dict[str, np.ndarray]:
    loop = teleop.build_ik_loop(None)
    q = dict(zip(names, q_ref))
    loop.ik.reset(q, lift_joint=0.0)
    return {s: loop.ik.grip_pose(s).position for s in ("left", "right")}


def startup(t0: int = 0):
    return [(t0, "lift", lift(t0)), (t0, "joint_states", joints(t0))]


def test_waits_for_feedback_then_holds_the_measured_pose():
    q = dict(HOME, left_elbow_flex=-0.4, right_gripper=0.2)
    inputs = [(0, "tick", tick()), (5 * MS, "joint_states", joints(5 * MS, q)), (10 * MS, "tick", tick())]
    inputs += [(15 * MS, "lift", lift(15 * MS)), (16 * MS, "joint_states", joints(16 * MS, q)), (20 * MS, "tick", tick())]
    cmds, diags = run(inputs)
    assert len(cmds) == 1  # nothing before both joint state and lift were known
    c = cmds[0]
    assert c["names"] == ARM and c["status"] == "hold"
    np.testing.assert_allclose(c["q_ref"], [q[n] for n in ARM])
    np.testing.assert_array_equal(c["dq_ref"], 0.0)
    assert diags[0]["level"] == "warn" and "waiting" in diags[0]["message"]


# an unfolded posture: at the folded home posture the arm's own links leave
# little room to move in most directions
READY = dict(HOME, **{f"{s}_{j}": v for s in ("left", "right")
                      for j, v in {"shoulder_lift": -0.6, "elbow_flex": 0.3, "wrist_flex": 0.6}.items()})


def test_targets_are_tracked_with_capped_speed_and_feedforward():
    ready_grips = fk(np.array([READY[n] for n in ARM]), ARM)
    goal_l = ready_grips["left"] + [0.05, 0.03, 0.04]
    goal_r = ready_grips["right"] + [0.04, -0.02, -0.05]
    inputs = [(0, "lift", lift(0)), (0, "joint_states", joints(0, READY))]
    t = 10 * MS
    for k in range(120):
        inputs.append((t, "joint_states", joints(t, READY)))
        inputs.append((t, "arm_targets", targets(t, arm(goal_l), arm(goal_r, gripper=9.0))))
        t += 10 * MS
    cmds, _ = run(inputs)
    assert len(cmds) == 120
    assert all(c["status"] == "ok" for c in cmds)
    dq = np.array([c["dq_ref"] for c in cmds])
    assert np.max(np.abs(dq)) <= 1.5 + 1e-9
    assert np.max(np.abs(dq[5])) > 0.1  # feedforward present while moving
    last = cmds[-1]
    grips = fk(last["q_ref"], last["names"])
    assert np.linalg.norm(grips["left"] - goal_l) < 2e-3
    assert np.linalg.norm(grips["right"] - goal_r) < 2e-3
    q = dict(zip(last["names"], last["q_ref"]))
    assert q["left_gripper"] == pytest.approx(0.3)
    assert q["right_gripper"] == pytest.approx(0.7)  # clamped to the joint range


def test_stale_joint_states_hold_both_arms():
    goal = GRIP_POS["left"] + [0.1, 0.0, 0.0]
    inputs = startup() + [(10 * MS, "arm_targets", targets(10 * MS, arm(goal), arm(GRIP_POS["right"])))]
    # joint states stop at t=0; ticks run on past the 0.25 s timeout
    for k in range(2, 40):
        t = k * 10 * MS
        inputs.append((t, "arm_targets", targets(t, arm(goal), arm(GRIP_POS["right"]))))
    cmds, diags = run(inputs)
    stale = [c for c in cmds if c["status"] == "hold"]
    assert stale, "the arms must hold once feedback is older than the timeout"
    first_stale = cmds.index(stale[0])
    assert all(c["status"] == "hold" for c in cmds[first_stale:])
    # the arms brake to their last goal within the caps and stay there: at most
    # one tick plus a full-speed braking distance past the last solved command
    caps = models.load_yaml("alohamini2/ik.yaml")["joint_reference"]
    stop_s = caps["max_speed_rad_s"] / caps["max_accel_rad_s2"] + caps["max_accel_rad_s2"] / caps["max_jerk_rad_s3"]
    lead = caps["max_speed_rad_s"] * (0.01 + stop_s / 2)
    np.testing.assert_array_equal(stale[-1]["dq_ref"], 0.0)
    np.testing.assert_array_equal(stale[-1]["q_ref"], stale[-2]["q_ref"])
    assert np.max(np.abs(stale[-1]["q_ref"] - cmds[first_stale - 1]["q_ref"])) <= lead + 1e-9
    details = ik_details(diags[-1])
    assert details["arms"]["left"]["status"] == "stale_feedback"


def test_invalid_targets_are_rejected_and_hold():
    good = targets(10 * MS, arm(GRIP_POS["left"] + [0.05, 0, 0]), arm(GRIP_POS["right"]))
    row = good.to_pylist()[0]
    row["left"]["position"] = [float("nan"), 0.0, 0.5]
    bad = pa.array([row], type=schema("ArmTargets"))
    inputs = startup() + [(10 * MS, "joint_states", joints(10 * MS)), (10 * MS, "arm_targets", good),
                          (20 * MS, "joint_states", joints(20 * MS)), (20 * MS, "arm_targets", bad),
                          (30 * MS, "joint_states", joints(30 * MS)), (30 * MS, "tick", tick())]
    cmds, diags = run(inputs)
    assert [c["status"] for c in cmds] == ["ok", "hold"]
    # no new goal: the arm goes on braking along its plan, within the speed cap
    cap = models.load_yaml("alohamini2/ik.yaml")["joint_reference"]["max_speed_rad_s"]
    assert np.max(np.abs(cmds[-1]["dq_ref"])) <= cap
    assert np.max(np.abs(cmds[-1]["q_ref"] - cmds[0]["q_ref"])) <= cap * 0.02 + 1e-12
    assert diags[-1]["rejected"] == 1
    assert "NaN" in diags[-1]["last_error"]
    assert ik_details(diags[-1])["arms"]["left"]["status"] == "invalid_target"


def test_wrong_frame_or_far_target_holds():
    inputs = startup() + [(10 * MS, "arm_targets", targets(10 * MS, arm(GRIP_POS["left"]), arm(GRIP_POS["right"]), frame_id="odom")),
                          (20 * MS, "arm_targets", targets(20 * MS, arm([5.0, 0.0, 0.5]), arm(GRIP_POS["right"] + [0.05, 0, 0])))]
    cmds, diags = run(inputs)
    assert len(cmds) == 1
    assert ik_details(diags[-1])["arms"]["left"]["status"] == "invalid_target"
    assert ik_details(diags[-1])["arms"]["right"]["status"] == "ok"
    assert diags[-1]["rejected"] == 1 and "frame_id" in diags[-1]["last_error"]


def test_disabled_arm_holds_while_the_other_moves():
    inputs = startup()
    for k in range(1, 30):
        t = k * 10 * MS
        inputs.append((t, "joint_states", joints(t)))
        inputs.append((t, "arm_targets", targets(t, arm(GRIP_POS["left"] + [0.1, 0, 0], enabled=False), arm(GRIP_POS["right"] + [0.05, 0, 0.05]))))
    cmds, _ = run(inputs)
    left = [i for i, n in enumerate(ARM) if n.startswith("left_")]
    right = [i for i, n in enumerate(ARM) if n.startswith("right_") and not n.endswith("gripper")]
    np.testing.assert_allclose(cmds[-1]["q_ref"][left], [HOME[ARM[i]] for i in left])
    assert np.max(np.abs(cmds[-1]["q_ref"][right] - [HOME[ARM[i]] for i in right])) > 0.02


def test_projection_is_reported_in_diagnostics():
    below_floor = GRIP_POS["left"].copy()
    below_floor[2] = -0.3
    inputs = startup() + [(10 * MS, "joint_states", joints(10 * MS)),
                          (10 * MS, "arm_targets", targets(10 * MS, arm(below_floor), arm(GRIP_POS["right"])))]
    _, diags = run(inputs)
    proj = ik_details(diags[-1])["arms"]["left"]["projection_m"]
    assert proj == pytest.approx(0.3 + 0.03, abs=1e-6)  # projected up to box_min z = 0.03


def test_targets_solve_on_arrival_but_not_closer_than_the_spacing():
    inputs = startup() + [(10 * MS, "joint_states", joints(10 * MS))]
    # 12 ms: 2 ms after a solve, inside min_solve_spacing_s (2.5 ms): left pending
    # 14 ms: 4 ms after it: solved on arrival (the pending one is superseded)
    for t in (10 * MS, 12 * MS, 14 * MS):
        inputs.append((t, "arm_targets", targets(t, arm(GRIP_POS["left"] + [0.05, 0, 0]), arm(GRIP_POS["right"]))))
    inputs.append((16 * MS, "tick", tick()))  # 2 ms after a solve: not due
    inputs.append((21 * MS, "tick", tick()))  # 7 ms: still not due (0.9 periods)
    inputs.append((24 * MS, "tick", tick()))  # 10 ms: due
    cmds, _ = run(inputs)
    assert [c["stamp_ns"] for c in cmds] == [10 * MS, 14 * MS, 24 * MS]


def test_a_pending_target_is_solved_by_the_next_due_tick():
    inputs = startup() + [(10 * MS, "joint_states", joints(10 * MS))]
    for t in (10 * MS, 11 * MS):  # the second arrives 1 ms after the first solve
        inputs.append((t, "arm_targets", targets(t, arm(GRIP_POS["left"] + [0.05, 0, 0]), arm(GRIP_POS["right"]))))
    inputs.append((19 * MS, "tick", tick()))  # 9 ms: due, solves the pending target
    cmds, _ = run(inputs)
    assert [c["stamp_ns"] for c in cmds] == [10 * MS, 19 * MS]


def test_unknown_joint_names_are_rejected_and_do_not_initialise():
    bad = joints(0, names=[n.replace("left_wrist_roll", "left_wrist_spin") for n in ARM])
    inputs = [(0, "lift", lift(0)), (0, "joint_states", bad), (10 * MS, "tick", tick())]
    cmds, diags = run(inputs)
    assert cmds == []
    assert diags[-1]["rejected"] == 1 and "left_wrist_spin" in diags[-1]["last_error"]


def test_holding_arm_moved_by_hand_restarts_from_the_measurement():
    sagged = dict(HOME, left_shoulder_lift=HOME["left_shoulder_lift"] - 0.5)
    inputs = startup()
    for k in range(1, 4):
        t = k * 10 * MS
        inputs.append((t, "joint_states", joints(t, sagged)))
        inputs.append((t, "arm_targets", targets(t, arm(GRIP_POS["left"], enabled=False), arm(GRIP_POS["right"]))))
    cmds, diags = run(inputs)
    q = dict(zip(cmds[-1]["names"], cmds[-1]["q_ref"]))
    assert q["left_shoulder_lift"] == pytest.approx(sagged["left_shoulder_lift"])
    assert q["right_shoulder_lift"] == pytest.approx(HOME["right_shoulder_lift"], abs=0.02)
    assert ik_details(diags[-1])["resyncs"] == 1


def test_small_tracking_lag_does_not_resync():
    lagging = dict(HOME, left_shoulder_lift=HOME["left_shoulder_lift"] - 0.05)
    inputs = startup()
    for k in range(1, 4):
        t = k * 10 * MS
        inputs.append((t, "joint_states", joints(t, lagging)))
        inputs.append((t, "arm_targets", targets(t, arm(GRIP_POS["left"], enabled=False), arm(GRIP_POS["right"]))))
    cmds, diags = run(inputs)
    q = dict(zip(cmds[-1]["names"], cmds[-1]["q_ref"]))
    assert q["left_shoulder_lift"] == pytest.approx(HOME["left_shoulder_lift"])
    assert ik_details(diags[-1])["resyncs"] == 0


def test_a_teleop_reset_request_homes_the_arms_with_status_homing():
    offset = dict(HOME, left_shoulder_lift=HOME["left_shoulder_lift"] - 0.4, right_elbow_flex=HOME["right_elbow_flex"] + 0.3)
    home = np.array([HOME[n] for n in ARM])
    inputs = [(0, "lift", lift(0)), (0, "joint_states", joints(0, offset)),
              (5 * MS, "teleop_state", teleop_state(5 * MS, 4)),  # the first state: baseline only
              (10 * MS, "joint_states", joints(10 * MS, offset)), (10 * MS, "tick", tick()),
              (15 * MS, "teleop_state", teleop_state(15 * MS, 5))]  # one reset request
    # 0.2 s: both arms still on their way (the global fallback takes them home in joint space, at the joint caps)
    for k in range(2, 22):
        t = k * 10 * MS
        inputs += [(t, "joint_states", joints(t, offset)), (t, "tick", tick())]
    inputs.append((230 * MS, "teleop_state", teleop_state(230 * MS, -1)))
    cmds, diags, meta = run_node(inputs)
    assert meta[0]["left_status"] == meta[0]["right_status"] == "no_target" and cmds[0]["status"] == "hold"
    assert all(m["left_status"] == m["right_status"] == "homing" for m in meta[1:])
    assert all(c["status"] == "ok" for c in cmds[1:])
    dq = np.array([c["dq_ref"] for c in cmds])
    assert np.max(np.abs(dq)) <= 1.5 + 1e-9
    home_grips = fk(home, ARM)
    gap = [max(np.linalg.norm(g[s] - home_grips[s]) for s in g) for g in (fk(c["q_ref"], ARM) for c in cmds)]
    # on its way home (about 3.8 mm a tick once under way: half the gap in 0.2 s), not there at once
    assert gap[-1] < 0.6 * gap[0] and gap[-1] > 0.005
    assert np.all(np.diff(gap[8:]) < -0.003)
    details = ik_details(diags[-1])
    assert details["resets"] == 1 and details["homing"] == {"left": True, "right": True}
    # homing is the robot's own motion, not a fault: the node's own level stays ok, and only the
    # rejected teleop_state of this period raises the report to warn (with its own message)
    assert diags[-1]["level"] == "warn" and diags[-1]["message"].startswith("since the last report: 1 input(s) rejected")
    assert diags[-1]["rejected"] == 1 and "reset_count" in diags[-1]["last_error"]
