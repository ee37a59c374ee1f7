"""base node (sim variant) end to end with a scripted MockNode and a fake clock."""

import json
import math

import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora import models
from teledora.nodes.drive import base_sim
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.omni_drive import OmniDrive
from teledora.operators.contract.messages import decode, encode
from teledora.fakes.stepped_node import FakeClock, SteppedNode  # noqa: E402
from tests.models.profile_variant import use_profile

DRIVE = OmniDrive(load_drive_config().base.geometry)

TICK = pa.array([0], type=pa.uint64())


def cmd(f, l, w, stamp=0):
    return encode("BaseCommand", {"stamp_ns": stamp, "forward_m_s": f, "left_m_s": l, "yaw_rad_s": w})


def run(script):
    clock = FakeClock()
    node = SteppedNode(script, clock)
    base_sim.main([], node=node, clock=clock)
    return node


def test_odometry_names_the_frames_of_the_profile_it_runs_with(monkeypatch, tmp_path):
    use_profile(monkeypatch, tmp_path, odom_frame="odom_b", base_frame="chassis_b")
    odom = run([("tick", TICK, 0.0), ("tick", TICK, 0.01)]).outputs_decoded("odom", "Odometry")
    assert {(m["frame_id"], m["child_frame_id"]) for m in odom} == {("odom_b", "chassis_b")}


def test_quantizes_and_integrates_the_recovered_twist():
    script = [("base_cmd", cmd(0.2, 0.05, 0.3), 0.0), ("tick", TICK, 0.0)]
    for k in range(100):
        script.append(("tick", TICK, 0.01))
        if k % 10 == 9:
            script.append(("base_cmd", cmd(0.2, 0.05, 0.3), 0.0))  # refreshes the watchdog
    node = run(script)
    wheels = node.outputs_decoded("wheel_commands", "WheelCommands")
    assert (wheels[-1]["left"], wheels[-1]["back"], wheels[-1]["right"]) == DRIVE.body_to_wheel_raw(0.2, 0.05, 0.3)
    odom = node.outputs_decoded("odom", "Odometry")
    profile = models.load_profile()
    assert odom[-1]["frame_id"] == profile.odom_frame and odom[-1]["child_frame_id"] == profile.base_frame
    twist = DRIVE.wheel_raw_to_body(*DRIVE.body_to_wheel_raw(0.2, 0.05, 0.3))
    assert odom[-1]["vx"] == twist.forward_m_s and odom[-1]["wz"] == twist.yaw_rad_s
    # 100 intervals of 10 ms at the recovered twist = 1 s along the arc
    th = twist.yaw_rad_s
    x = (twist.forward_m_s * math.sin(th) - twist.left_m_s * (1 - math.cos(th))) / th
    assert odom[-1]["x"] == pytest.approx(x, abs=1e-9)
    assert odom[-1]["yaw"] == pytest.approx(th, abs=1e-9)


def test_watchdog_stops_the_wheels_after_one_second():
    script = [("base_cmd", cmd(0.1, 0.0, 0.0), 0.0)] + [("tick", TICK, 0.1) for _ in range(15)]
    node = run(script)
    wheels = [(w["left"], w["back"], w["right"]) for w in node.outputs_decoded("wheel_commands", "WheelCommands")]
    moving = DRIVE.body_to_wheel_raw(0.1, 0.0, 0.0)
    assert wheels[:10] == [moving] * 10  # 0.1 .. 1.0 s after the command
    assert wheels[10:] == [(0, 0, 0)] * 5  # > 1.0 s: stopped
    diags = node.outputs_decoded("diagnostics", "Diagnostics")
    assert '"watchdog_trips": 1' in diags[-1]["details_json"]


def test_bad_command_is_rejected_and_last_valid_kept():
    bad = pa.array([{"stamp_ns": 0, "forward_m_s": 1.0}])
    nan = cmd(0.0, 0.0, 0.0)
    nan = pa.array([{"stamp_ns": 0, "forward_m_s": float("nan"), "left_m_s": 0.0, "yaw_rad_s": 0.0}], type=nan.type)
    huge = cmd(1e308, -1e308, 0.0)
    script = [("base_cmd", cmd(0.1, 0.0, 0.0), 0.0), ("base_cmd", bad, 0.0), ("base_cmd", nan, 0.0),
              ("base_cmd", huge, 0.0), ("tick", TICK, 0.01)]
    node = run(script)
    w = node.outputs_decoded("wheel_commands", "WheelCommands")[-1]
    assert (w["left"], w["back"], w["right"]) == DRIVE.body_to_wheel_raw(0.1, 0.0, 0.0)
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert diag["rejected"] == 3 and diag["received"] == 4 and "forward_m_s: 1e+308 is beyond the plausible" in diag["last_error"]
    assert diag["level"] == "warn" and "3 input(s) rejected" in diag["message"]


def test_burst_keeps_newest_command_and_does_not_stop_on_stop_event():
    # plain MockNode: the whole queue arrives as one burst, STOP included
    node = MockNode([("base_cmd", cmd(0.1, 0, 0)), ("base_cmd", cmd(0.0, 0.1, 0)), {"type": "STOP", "id": "x"}, ("tick", TICK)])
    clock = FakeClock()
    base_sim.main([], node=node, clock=clock)
    w = decode("WheelCommands", node.outputs["wheel_commands"][-1])
    assert (w["left"], w["back"], w["right"]) == DRIVE.body_to_wheel_raw(0.0, 0.1, 0.0)


def test_absurd_commands_never_reach_the_wheels_and_over_cap_ones_are_clamped():
    profile = models.load_profile()
    v, w = profile.base.max_linear_m_s, profile.base.max_yaw_rad_s
    script = [("base_cmd", cmd(1e300, 0.0, 0.0), 0.0), ("tick", TICK, 0.01),  # absurd first: nothing to drive
              ("base_cmd", cmd(0.6, 0.8, -2.0), 0.0), ("tick", TICK, 0.01),  # 1 m/s, -2 rad/s: over both caps
              ("base_cmd", cmd(0.0, -1e300, 0.0), 0.0), ("tick", TICK, 0.01)]  # absurd: the clamped command stands
    node = run(script)
    wheels = [(m["left"], m["back"], m["right"]) for m in node.outputs_decoded("wheel_commands", "WheelCommands")]
    capped = DRIVE.body_to_wheel_raw(0.6 * v, 0.8 * v, -w)  # 1 m/s scaled onto the 0.25 m/s cap, direction kept
    assert wheels == [(0, 0, 0), capped, capped]
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert (diag["rejected"], diag["clamped"], diag["level"]) == (2, 1, "warn")
    assert json.loads(diag["details_json"])["limits"] == {
        "rejected": 0, "clamped": 1, "clamped_by": {"linear speed": 1, "yaw_rad_s": 1}}


def test_level_is_warn_only_for_the_period_that_rejected():
    script = [("base_cmd", cmd(1e6, 0.0, 0.0), 0.0)]
    for _ in range(25):  # 2.5 s of valid commands: the next reports are clean
        script += [("base_cmd", cmd(0.1, 0.0, 0.0), 0.0), ("tick", TICK, 0.1)]
    node = run(script)
    diags = node.outputs_decoded("diagnostics", "Diagnostics")
    assert len(diags) >= 3
    assert diags[0]["level"] == "warn" and "1 input(s) rejected" in diags[0]["message"]
    assert [d["level"] for d in diags[1:]] == ["ok"] * (len(diags) - 1)
    assert all(d["rejected"] == 1 for d in diags)


@pytest.mark.parametrize("queued_s, moves", [(0.2, True), (1.5, False)])
def test_a_command_that_waited_past_the_watchdog_timeout_never_moves_the_base(queued_s, moves):
    """The watchdog counts from the command's stamp, not from when it came out of a queue."""
    start = FakeClock().now_ns
    timeout_s = load_drive_config().base.watchdog_timeout_s
    assert 0.2 < timeout_s < 1.5
    sent_ns = start - int(queued_s * 1e9)  # sent this long before it reaches the base
    node = run([("base_cmd", cmd(0.2, 0.0, 0.0, stamp=sent_ns), 0.0), ("tick", TICK, 0.01)])
    wheels = node.outputs_decoded("wheel_commands", "WheelCommands")[-1]
    moving = (wheels["left"], wheels["back"], wheels["right"]) != (0, 0, 0)
    assert moving == moves
