"""Actuator nodes hold the robot when the recorder's heartbeat stops, ends or
reports a lag past its bound (input ``recorder_status``)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from teledora.fakes.stepped_node import FakeClock, SteppedNode
from teledora.nodes.drive import arms_sim, base_sim
from teledora.operators.contract.messages import decode, encode
from teledora.models import load_profile
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.omni_drive import OmniDrive

TICK = pa.array([0], type=pa.uint64())
body_to_wheel_raw = OmniDrive(load_drive_config().base.geometry).body_to_wheel_raw


def node_config(node_id: str, inputs: dict[str, str]) -> str:
    """The node config dora hands a node, as far as the runtime reads it."""
    lines = [f"node_id: {node_id}", "run_config:", "  inputs:"] + [f"    {k}: {v}" for k, v in inputs.items()]
    return "\n".join(lines) + "\n"


def beat(lag_s: float = 0.0):
    return encode("RecorderStatus", {"stamp_ns": 0, "recording": True, "messages": 1, "lag_ns": int(lag_s * 1e9)})


def cmd(forward: float):
    return encode("BaseCommand", {"stamp_ns": 0, "forward_m_s": forward, "left_m_s": 0.0, "yaw_rad_s": 0.0})


@pytest.fixture()
def base_wired(monkeypatch):
    monkeypatch.setenv("DORA_NODE_CONFIG", node_config("base", {
        "base_cmd": "teleop/base_cmd", "tick": "dora/timer/millis/20", "recorder_status": "recorder/status"}))


def run_base(script):
    clock = FakeClock()
    node = SteppedNode(script, clock)
    base_sim.main([], node=node, clock=clock)
    wheels = [(w["left"], w["back"], w["right"]) for w in node.outputs_decoded("wheel_commands", "WheelCommands")]
    return node, wheels


def test_base_waits_for_the_first_heartbeat_then_needs_a_fresh_command(base_wired):
    script = [("base_cmd", cmd(0.1), 0.0), ("tick", TICK, 0.1), ("recorder_status", beat(), 0.05), ("tick", TICK, 0.05),
              ("base_cmd", cmd(0.1), 0.0), ("tick", TICK, 0.05)]
    _, wheels = run_base(script)
    # a command given while held is dropped, not applied later
    assert wheels == [(0, 0, 0), (0, 0, 0), body_to_wheel_raw(0.1, 0.0, 0.0)]


def test_base_stops_when_the_heartbeat_stops(base_wired):
    script = [("recorder_status", beat(), 0.0)]
    for k in range(30):  # 3 s of commands at 10 Hz; heartbeats only for the first 0.5 s
        script.append(("base_cmd", cmd(0.1), 0.0))
        if k < 5:
            script.append(("recorder_status", beat(), 0.0))
        script.append(("tick", TICK, 0.1))
    node, wheels = run_base(script)
    moving = body_to_wheel_raw(0.1, 0.0, 0.0)
    # last heartbeat at 0.4 s; silence > 1 s from 1.5 s on
    assert wheels[:14] == [moving] * 14 and wheels[15:] == [(0, 0, 0)] * 15
    diags = node.outputs_decoded("diagnostics", "Diagnostics")
    assert diags[-1]["level"] == "error" and "no recorder heartbeat" in diags[-1]["message"]
    assert any(log["level"] == "error" and "SAFE STOP" in log["message"] for log in node.logs)


def test_base_holds_while_the_recorder_is_behind(base_wired):
    script = [("recorder_status", beat(3.0), 0.0), ("base_cmd", cmd(0.1), 0.0), ("tick", TICK, 0.1),
              ("recorder_status", beat(0.2), 0.0), ("base_cmd", cmd(0.1), 0.0), ("tick", TICK, 0.1)]
    _, wheels = run_base(script)
    assert wheels == [(0, 0, 0), body_to_wheel_raw(0.1, 0.0, 0.0)]


def test_guard_off_for_runs_without_recording(base_wired, monkeypatch):
    monkeypatch.setenv("TELEDORA_RECORDER_GUARD", "off")
    _, wheels = run_base([("base_cmd", cmd(0.1), 0.0), ("tick", TICK, 0.1)])
    assert wheels == [body_to_wheel_raw(0.1, 0.0, 0.0)]


def test_arms_hold_their_last_target_until_the_recorder_answers(monkeypatch):
    monkeypatch.setenv("DORA_NODE_CONFIG", node_config("arms", {
        "joint_commands": "teleop/joint_commands", "sim_joint_states": "sim/joint_states", "recorder_status": "recorder/status"}))
    monkeypatch.setenv("TELEDORA_RECORDER_TIMEOUT_S", "3600")  # the arms node reads the host clock
    joints = load_profile("alohamini2/profile.yaml").arm_joint_names
    command = encode("JointCommands", {"stamp_ns": 0, "names": joints, "q_ref": [0.1] * len(joints),
                                       "dq_ref": [0.0] * len(joints), "status": "ok"})
    from dora.testing import MockNode

    node = MockNode([("joint_commands", command), ("recorder_status", beat()), ("joint_commands", command)])
    arms_sim.main([], node=node)
    assert len(node.outputs.get("servo_targets", [])) == 1  # only the command after the heartbeat


def test_base_holds_for_good_once_the_recorder_is_gone(base_wired):
    from dora.testing import MockNode

    clock = FakeClock()
    closed = {"type": "INPUT_CLOSED", "id": "recorder_status"}
    node = MockNode([("recorder_status", beat()), ("base_cmd", cmd(0.1)), ("tick", TICK), closed,
                     ("base_cmd", cmd(0.1)), ("tick", TICK), ("recorder_status", beat()), ("base_cmd", cmd(0.1)), ("tick", TICK)])
    node.drain = lambda: []  # one event per batch, as dora hands them out when they trickle in
    base_sim.main([], node=node, clock=clock)
    wheels = [(w["left"], w["back"], w["right"]) for w in (decode("WheelCommands", v) for v in node.outputs["wheel_commands"])]
    assert wheels == [body_to_wheel_raw(0.1, 0.0, 0.0), (0, 0, 0), (0, 0, 0)]


def test_lift_stops_while_the_recorder_is_silent(monkeypatch):
    from teledora.nodes.drive import lift_sim

    monkeypatch.setenv("DORA_NODE_CONFIG", node_config("lift", {
        "lift_cmd": "teleop/lift_cmd", "tick": "dora/timer/millis/20", "recorder_status": "recorder/status"}))
    lift_cmd = encode("LiftCommand", {"stamp_ns": 0, "velocity_m_s": 0.02})
    script = [("tick", TICK, 0.01) for _ in range(200)]  # homing (about 1.5-2 s)
    for k in range(300):  # 3 s of commands; heartbeats only during the first 1.5 s
        if k % 10 == 0:
            script.append(("lift_cmd", lift_cmd, 0.0))
        if k % 10 == 0 and (k < 150 or k == 0):
            script.append(("recorder_status", beat(), 0.0))
        script.append(("tick", TICK, 0.01))
    clock = FakeClock()
    node = SteppedNode([("recorder_status", beat(), 0.0)] + script, clock)
    lift_sim.main(["--start-height-mm", "20"], node=node, clock=clock)
    states = node.outputs_decoded("state", "LiftState")
    rising = states[200 + 100]
    assert rising["homed"] and rising["velocity_m_s"] == pytest.approx(0.02, abs=0.002)
    # last heartbeat at 1.4 s into the commands; > 1 s of silence from 2.5 s on
    assert states[-1]["velocity_m_s"] == 0.0
    assert states[-1]["height_m"] == pytest.approx(states[-20]["height_m"], abs=1e-6)
