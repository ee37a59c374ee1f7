"""The sim-side nodes (`sim`, `arms` sim variant, scripted `xr`) under dora's MockNode."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora import models
from teledora.nodes.drive import arms_sim
from teledora.nodes.sim import sim
from teledora.nodes.xr import xr_scripted
from teledora.operators.contract.messages import decode, encode

PROFILE = models.load_profile()
JOINTS = list(PROFILE.arm_joint_names)


def commands(q: float = 0.2, names=None) -> pa.Array:
    names = names or JOINTS
    return encode("JointCommands", dict(stamp_ns=1, names=names, q_ref=[q] * len(names), dq_ref=[0.0] * len(names), status="ok"))


class NeverStops(MockNode):
    """Delivers its inputs, then nothing more: dora never stops this run early."""

    def __init__(self, inputs: list) -> None:
        super().__init__(inputs)
        self._events.pop()  # the STOP MockNode appends

    def next(self, timeout: float | None = None) -> dict | None:
        event = super().next(timeout)
        if event is None and timeout is not None:
            return {"type": "ERROR", "error": "timeout"}  # what dora's next(timeout) returns when nothing came
        return event


def diagnostics(node: MockNode) -> dict:
    return decode("Diagnostics", node.outputs["diagnostics"][-1])


class FastClock:
    """A monotonic clock that moves 0.2 s on every read."""

    def __init__(self) -> None:
        self.t = 0

    def __call__(self) -> int:
        self.t += 200_000_000
        return self.t


def test_sim_applies_inputs_publishes_states_and_survives_bad_messages() -> None:
    odom = encode("Odometry", dict(stamp_ns=1, frame_id="odom", child_frame_id="base_link", x=1.0, y=-0.5, yaw=0.3, vx=0.0, vy=0.0, wz=0.0))
    lift = encode("LiftState", dict(stamp_ns=1, height_m=0.2, velocity_m_s=0.0, homed=True))
    node = MockNode([
        ("servo_targets", commands(0.2)),
        ("odom", odom),
        ("lift", lift),
        ("odom", pa.array([1.0, 2.0])),  # not a contract message, and the newest odom
    ])
    sim.main(node=node, clock=FastClock())
    gt = decode("GroundTruth", node.outputs["ground_truth"][-1])
    assert (gt["x"], gt["y"]) == (0.0, 0.0)  # only the newest odom counts, and it was rejected
    assert gt["lift_height_m"] > 0.0  # moving up towards 0.2
    js = decode("JointState", node.outputs["joint_states"][-1])
    assert js["names"] == JOINTS
    objects = decode("ObjectPoses", node.outputs["objects"][-1])
    assert len(node.outputs["objects"]) == len(node.outputs["ground_truth"])
    assert objects["frame_id"] == "world" and "cube_red" in objects["names"]
    red = objects["names"].index("cube_red")  # resting on the stand (scene.xml), upright
    assert (objects["x"][red], objects["y"][red]) == pytest.approx((0.56, -1.47), abs=1e-3)
    assert objects["z"][red] == pytest.approx(0.42, abs=2e-3) and abs(objects["qw"][red]) > 0.999
    d = diagnostics(node)
    assert d["rejected"] == 1 and "wrong Arrow type" in d["last_error"]
    assert "sim_time_s" in json.loads(d["details_json"])


def test_sim_rejects_unknown_joints_whole() -> None:
    node = MockNode([("servo_targets", commands(0.2, JOINTS[:3] + ["tail"]))])
    sim.main(node=node, clock=FastClock())
    d = diagnostics(node)
    assert d["rejected"] == 1 and "not in the model: ['tail']" in d["last_error"]


def test_arms_sim_quantizes_like_a_servo_and_rejects_incomplete_commands() -> None:
    node = MockNode([
        ("joint_commands", commands(0.2001)),
        ("sim_joint_states", encode("JointState", dict(stamp_ns=1, names=JOINTS, position=[0.3001] * 14, velocity=[0.0] * 14, effort=[0.0] * 14))),
    ])
    arms_sim.main(node=node)
    sent = decode("JointCommands", node.outputs["servo_targets"][0])
    tick = 2 * np.pi / 4096
    np.testing.assert_allclose(sent["q_ref"] / tick, np.round(sent["q_ref"] / tick), atol=1e-9)
    assert abs(sent["q_ref"][0] - 0.2001) <= tick / 2
    js = decode("JointState", node.outputs["joint_states"][0])
    assert abs(js["position"][0] - 0.3001) <= tick / 2

    node = MockNode([("joint_commands", commands(0.2, JOINTS[:7]))])
    arms_sim.main(node=node)
    assert "servo_targets" not in node.outputs
    assert "missing joint names" in diagnostics(node)["last_error"]


def test_scripted_xr_plays_the_whole_script_and_ends(tmp_path, monkeypatch) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("hand_origin_m: {left: [0.3, 0.2, 1.0], right: [0.3, -0.2, 1.0]}\n"
                      "keyframes: [{t_s: 0.0}, {t_s: 0.5, left: {offset_m: [0.0, 0.0, 0.1]}}]\n")
    monkeypatch.setenv("TELEDORA_XR_SCRIPT", str(script))
    monkeypatch.setenv("TELEDORA_XR_RATE_HZ", "10")
    now = [0.0]

    node = NeverStops([])
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    reports = [decode("XrControllers", v) for v in node.outputs["controllers"]]
    assert [r["seq"] for r in reports] == list(range(len(reports)))
    assert len(reports) == 6  # 0.0 .. 0.5 s at 10 Hz
    assert reports[-1]["left"]["position"][2] == 1.1


class StopsAfter(NeverStops):
    """Says STOP once the node has drained its queue ``polls`` times (a paced
    node polls between its steps)."""

    def __init__(self, polls: int) -> None:
        super().__init__([])
        self.polls = polls

    def drain(self) -> list:
        self.polls -= 1
        if self.polls < 0:
            return [{"type": "STOP", "id": "MANUAL"}]
        return []


def test_scripted_xr_repeats_its_script_until_stopped(tmp_path, monkeypatch) -> None:
    script = tmp_path / "s.yaml"
    script.write_text("hand_origin_m: {left: [0.3, 0.2, 1.0], right: [0.3, -0.2, 1.0]}\n"
                      "keyframes: [{t_s: 0.0}, {t_s: 0.5, left: {offset_m: [0.0, 0.0, 0.1]}}]\n")
    monkeypatch.setenv("TELEDORA_XR_SCRIPT", str(script))
    monkeypatch.setenv("TELEDORA_XR_RATE_HZ", "10")
    monkeypatch.setenv("TELEDORA_XR_REPEAT", "1")
    now = [0.0]
    node = StopsAfter(polls=40)
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    reports = [decode("XrControllers", v) for v in node.outputs["controllers"]]
    assert len(reports) > 6 * 3  # three passes and more of a 6-report script, not one
    assert [r["seq"] for r in reports] == list(range(len(reports)))  # one sequence across the passes
    heights = [round(float(r["left"]["position"][2]), 6) for r in reports]
    restarts = sum(1 for a, b in zip(heights, heights[1:]) if b < a)
    assert heights.count(1.1) >= 3 and restarts >= 3  # the hand goes up, then starts low again, each pass
    assert json.loads(diagnostics(node)["details_json"])["passes"] >= 3


def test_scripted_xr_steers_to_a_base_goal_from_odometry_and_waits_for_it(tmp_path, monkeypatch) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(
        "hand_origin_m: {left: [0.3, 0.2, 1.0], right: [0.3, -0.2, 1.0]}\n"
        "keyframes: [{t_s: 0.0, base: {drive_to_m: [1.0, 0.0]}}, {t_s: 0.5}]\n"
        "base_driving: {drive_stick: 0.9, turn_stick: 0.9, ease_within_m: 0.2, ease_within_deg: 20.0,\n"
        "  min_push: 0.3, reached_m: 0.02, reached_deg: 1.0, max_wait_s: 1.0}\n")
    monkeypatch.setenv("TELEDORA_XR_SCRIPT", str(script))
    monkeypatch.setenv("TELEDORA_XR_RATE_HZ", "10")
    now = [0.0]
    odom = encode("Odometry", {"stamp_ns": 1, "frame_id": "odom", "child_frame_id": "base_link",
                               "x": 0.0, "y": 0.0, "yaw": 0.0, "vx": 0.0, "vy": 0.0, "wz": 0.0})
    node = NeverStops([("odom", odom)])
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    reports = [decode("XrControllers", v) for v in node.outputs["controllers"]]
    assert reports[0]["left"]["stick"].tolist() == [0.0, 0.0]  # no odometry seen yet
    assert reports[1]["left"]["stick"][1] == pytest.approx(-0.9)  # then it pushes towards the goal
    # the base never moves: script time waits 1 s (max_wait_s) past the 0.5 s the script lasts
    assert 15 <= len(reports) <= 17


def test_scripted_xr_stops_when_dora_asks() -> None:
    now = [0.0]
    node = MockNode([{"type": "STOP", "id": "MANUAL"}])
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert len(node.outputs["controllers"]) == 1  # one report, then the stop was seen


def test_scripted_xr_can_wait_for_the_robot(monkeypatch) -> None:
    monkeypatch.setenv("TELEDORA_XR_WAIT_FOR", "robot_ready")
    now = [0.0]
    node = MockNode([])  # the stream ends before the robot ever reported
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert "controllers" not in node.outputs

    state = encode("JointState", dict(stamp_ns=1, names=JOINTS, position=[0.0] * 14, velocity=[], effort=[]))
    node = NeverStops([("robot_ready", state)])
    monkeypatch.setenv("TELEDORA_XR_RATE_HZ", "10")
    script = models.path("alohamini2/demo_script.yaml")
    monkeypatch.setenv("TELEDORA_XR_SCRIPT", str(script))
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert len(node.outputs["controllers"]) > 200  # the whole script at 10 Hz


def test_scripted_xr_waits_for_every_listed_input(monkeypatch) -> None:
    """With two inputs to wait for, one of them alone does not start the script."""
    monkeypatch.setenv("TELEDORA_XR_WAIT_FOR", "robot_ready, cameras_ready")
    now = [0.0]
    state = encode("JointState", dict(stamp_ns=1, names=JOINTS, position=[0.0] * 14, velocity=[], effort=[]))
    node = MockNode([("robot_ready", state), ("robot_ready", state)])  # the cameras never came up
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert "controllers" not in node.outputs

    calibration = encode("CameraCalibration", dict(
        stamp_ns=1, camera="chest", source="sim", device="", width=640, height=480, rate_hz=10.0, fx=400.0, fy=400.0,
        cx=320.0, cy=240.0, distortion_model="plumb_bob", distortion=[0.0] * 5, parent_frame="base_link",
        mount_xyz=[0.0, 0.0, 1.0], mount_rpy=[0.0, 0.0, 0.0]))
    node = NeverStops([("robot_ready", state), ("cameras_ready", b"\x00")])  # not a calibration: refused, no start
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert "controllers" not in node.outputs

    node = NeverStops([("robot_ready", state), ("cameras_ready", calibration)])
    monkeypatch.setenv("TELEDORA_XR_RATE_HZ", "10")
    monkeypatch.setenv("TELEDORA_XR_SCRIPT", str(models.path("alohamini2/demo_script.yaml")))
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    assert len(node.outputs["controllers"]) > 200
