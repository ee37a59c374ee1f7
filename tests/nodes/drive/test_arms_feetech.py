"""arms node (Feetech variant): two pty buses, joint commands, current protection."""

import json
import math
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from teledora import models
from teledora.nodes.drive import arms_feetech
from teledora.operators.contract.messages import encode
from teledora.fakes.feetech_bus import FakeFeetechBus, arm_servos  # noqa: E402
from teledora.fakes.stepped_node import FakeClock, SteppedNode  # noqa: E402
from teledora.devices.drive.feetech_bus import FeetechBusError
from tests.models.profile_variant import use_profile

TICK = pa.array([0], type=pa.uint64())
JOINTS = ["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw_joint", "wrist_roll", "gripper"]


def command(targets: dict):
    names = list(targets)
    return encode("JointCommands", {"stamp_ns": 0, "names": names, "q_ref": [targets[n] for n in names],
                                    "dq_ref": [0.0] * len(names), "status": "ok"})


def run(script, clock, left, right, extra=()):
    node = SteppedNode(script, clock)
    arms_feetech.main(["--left-port", left.port, "--right-port", right.port, "--timeout-s", "0.2", *extra], node=node, clock=clock)
    return node


def ticks(n, dt=0.01):
    return [("tick", TICK, dt) for _ in range(n)]


def test_commands_move_the_servos_and_states_come_back_by_name():
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        target = {"left_elbow_flex": 0.5, "right_shoulder_pan": -0.3, "left_gripper": 0.35}
        node = run([("joint_commands", command(target), 0.0)] + ticks(100), clock, left, right)
        assert left.servos[3].registers[33] == 0 and left.servos[3].registers[21] == 16  # position mode, P=16
        assert left.servos[3].model.goal_position == round(math.degrees(0.5) * 4095 / 360 + 2047.5)
        assert right.servos[1].model.goal_position == round(math.degrees(-0.3) * 4095 / 360 + 2047.5)
        assert left.servos[7].model.goal_position == 2560  # half closed over 2048..3072
    states = node.outputs_decoded("joint_states", "JointState")
    last = dict(zip(states[-1]["names"], states[-1]["position"]))
    assert len(last) == 14 and set(last) == {f"{s}_{j}" for s in ("left", "right") for j in JOINTS}
    assert last["left_elbow_flex"] == pytest.approx(0.5, abs=0.01)
    assert last["right_shoulder_pan"] == pytest.approx(-0.3, abs=0.01)
    assert last["left_gripper"] == pytest.approx(0.35, abs=0.01)


def test_a_profile_gripper_that_no_servo_drives_stops_the_node(monkeypatch, tmp_path):
    arms = models.load_yaml("alohamini2/profile.yaml")["arms"]
    use_profile(monkeypatch, tmp_path, arms={**arms, "left": {**arms["left"], "gripper": "left_claw"}})
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        with pytest.raises(FeetechBusError, match="left_claw"):
            run(ticks(1), clock, left, right)


def test_unknown_joint_names_are_rejected_whole():
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        bad = command({"left_elbow_flex": 0.5, "left_tail": 1.0})
        node = run([("joint_commands", bad, 0.0)] + ticks(3), clock, left, right)
        assert left.servos[3].model.goal_position == 2048  # untouched: held its start pose
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert diag["rejected"] == 1 and "left_tail" in diag["last_error"]


def test_joint_freezes_over_1800_ma():
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        elbow = left.servos[3].model
        script = [("joint_commands", command({"left_elbow_flex": 1.0}), 0.0)] + ticks(5)
        script.append(("tick", TICK, 0.01, lambda: setattr(elbow, "load_current_ma", 1900.0)))
        script += ticks(3)
        run(script, clock, left, right)
        frozen = left.writes_to(3, 42)[-1]
        assert int.from_bytes(frozen, "little") < round(math.degrees(1.0) * 4095 / 360 + 2047.5) - 100


def test_overcurrent_trips_after_20_reads_and_releases_torque():
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        left.servos[2].model.load_current_ma = 2500.0
        node = SteppedNode(ticks(30), clock)
        with pytest.raises(arms_feetech.OvercurrentTripError, match="left_shoulder_lift.*20 consecutive"):
            arms_feetech.main(["--left-port", left.port, "--right-port", right.port, "--timeout-s", "0.2"], node=node, clock=clock)
        assert left.wait_for(lambda: all(not s.model.torque_enabled for s in left.servos.values()))
        assert right.wait_for(lambda: all(not s.model.torque_enabled for s in right.servos.values()))
    assert len(node.outputs["joint_states"]) == 20
    assert node.outputs_decoded("diagnostics", "Diagnostics")[-1]["level"] == "error"


def test_homing_offset_mismatch_is_refused():
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        left.servos[4].registers[31] = 5
        with pytest.raises(Exception, match="left_wrist_flex .*homing offset 5"):
            run(ticks(1), clock, left, right)


def test_servo_targets_are_the_goals_written_back_in_radians():
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        target = {"left_elbow_flex": 0.5, "right_shoulder_pan": -0.3, "left_gripper": 0.35, "right_wrist_roll": 9.0}
        node = run([("joint_commands", command(target), 0.0)] + ticks(3), clock, left, right)
        written_elbow = int.from_bytes(left.writes_to(3, 42)[-1], "little")
        written_roll = int.from_bytes(right.writes_to(6, 42)[-1], "little")
    sent = node.outputs_decoded("servo_targets", "JointCommands")
    assert len(sent) == 3  # one per tick once a command exists
    last = sent[-1]
    assert last["names"] == ["left_elbow_flex", "left_gripper", "right_shoulder_pan", "right_wrist_roll"]  # model order
    q = dict(zip(last["names"], last["q_ref"]))
    tick_rad = 2 * math.pi / 4096
    assert q["left_elbow_flex"] == pytest.approx(math.radians((written_elbow - 2047.5) * 360 / 4095))
    assert abs(q["left_elbow_flex"] - 0.5) <= tick_rad  # on the tick grid, within one tick of the command
    assert q["right_shoulder_pan"] == pytest.approx(-0.3, abs=tick_rad)
    assert q["left_gripper"] == pytest.approx(0.35, abs=0.002)
    # 9 rad is beyond the calibrated range: the clamped goal that was written is reported, not the command
    assert q["right_wrist_roll"] == pytest.approx(math.radians((written_roll - 2047.5) * 360 / 4095))
    assert q["right_wrist_roll"] < 4.0
    assert last["status"] == "ok" and list(last["dq_ref"]) == [0.0] * 4


def test_no_servo_targets_and_no_goal_writes_without_a_command():
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        left.servos[2].model.position_ticks = 1500.0  # the arm rests away from mid-scale
        node = run(ticks(5), clock, left, right)
        goals = left.writes_to(2, 42)
    assert "servo_targets" not in node.outputs or not node.outputs["servo_targets"]
    assert len(node.outputs["joint_states"]) == 5
    # the only goal ever written is the present position, at connect
    assert [int.from_bytes(g, "little") for g in goals] == [1500]


def test_bus_counters_reach_the_diagnostics():
    clock = FakeClock()
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        script = ticks(3) + [("tick", TICK, 0.01, lambda: setattr(left, "wrong_length_replies", 1))] + ticks(3)
        node = run(script, clock, left, right)
    bus = json.loads(node.outputs_decoded("diagnostics", "Diagnostics")[-1]["details_json"])["bus"]
    assert bus["length_errors"] == 1 and bus["retries"] == 1 and bus["timeouts"] == 0
    assert bus["transactions"] > 6


def _calibration_with_narrow_elbow(tmp_path: Path) -> Path:
    data = yaml.safe_load(models.path("alohamini2/calibration.yaml").read_text())
    data["servos"]["left_elbow_flex"].update(range_min=1000, range_max=3000)
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_absurd_commands_write_no_goal_and_over_range_ones_are_clamped_and_counted(tmp_path):
    clock = FakeClock()
    cal = _calibration_with_narrow_elbow(tmp_path)
    marks = []
    with FakeFeetechBus(arm_servos(), clock=clock) as left, FakeFeetechBus(arm_servos(), clock=clock) as right:
        mark = lambda: marks.append({sid: len(left.writes_to(sid, 42)) for sid in range(1, 8)})  # noqa: E731
        script = [("joint_commands", command({"left_elbow_flex": 1e300, "left_wrist_flex": 0.4}), 0.0, mark)] + ticks(3)
        script += [("joint_commands", command({"left_elbow_flex": 2.5, "left_gripper": -1.0}), 0.0, mark)] + ticks(3)
        node = run(script, clock, left, right, extra=("--calibration", str(cal)))
        assert left.wait_for(lambda: len(left.writes_to(3, 42)) == marks[1][3] + 3)  # the last sync writes landed
        elbow = [int.from_bytes(g, "little") for g in left.writes_to(3, 42)]
        wrist = [int.from_bytes(g, "little") for g in left.writes_to(4, 42)]
        gripper = [int.from_bytes(g, "little") for g in left.writes_to(7, 42)]
    # the absurd command was dropped whole: nothing but the connect goal until the next command
    assert elbow[: marks[1][3]] == [2048] and wrist[: marks[1][4]] == [2048]
    # 2.5 rad is inside the model's ±3.14 but past this elbow's calibrated end (raw 3000, about 1.53 rad)
    assert elbow[marks[1][3]:] == [3000] * 3
    assert gripper[marks[1][7]:] == [3072] * 3  # -1 rad closure clamped to 0 (open: the high raw end)
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert (diag["rejected"], diag["clamped"], diag["level"]) == (1, 1, "warn")
    assert "left_elbow_flex q_ref 2.5 rad clamped to 1.53" in diag["message"]
    assert "left_elbow_flex: 1e+300 is outside" in diag["last_error"]  # refused at decode, before the limits
    limits = json.loads(diag["details_json"])["limits"]
    assert limits["clamped_by"] == {"left_elbow_flex q_ref": 1, "left_gripper q_ref": 1}
