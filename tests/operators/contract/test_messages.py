"""The message contract: round trips for every kind, and every rejection rule."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest

from teledora.operators.contract import messages as m
def hand(**over):
    h = dict(
        connected=True, epoch=3, pose_valid=True, position=[0.1, 0.2, 1.0], orientation=[0, 0, 0, 1],
        trigger=0.5, squeeze=0.0, stick=[0.0, -1.0], primary=False, secondary=True, stick_click=False,
        menu=False, pose_stamp_ns=10, input_stamp_ns=11,
    )
    h.update(over)
    return h


def arm_target(**over):
    a = dict(enabled=True, position=[0.3, 0.2, 0.5], orientation=[0, 0, 0, 1], gripper=0.35, slow=False)
    a.update(over)
    return a


NAMES = ["a", "b"]
SAMPLES = {
    "XrControllers": dict(stamp_ns=1, frame_id="operator", seq=7, source="webxr", focused=True, ui_estop=False,
                          ui_release_stop=False, ui_pause=False, ui_episode_start=False, ui_episode_keep=False,
                          ui_episode_discard=True, left=hand(), right=hand(epoch=4)),
    "ArmTargets": dict(stamp_ns=1, frame_id="base_link", left=arm_target(), right=arm_target(enabled=False)),
    "BaseCommand": dict(stamp_ns=1, forward_m_s=0.1, left_m_s=-0.05, yaw_rad_s=0.2),
    "LiftCommand": dict(stamp_ns=1, velocity_m_s=0.02),
    "EpisodeMark": dict(stamp_ns=1, event="start", task="pick up the red cube"),
    "EpisodeState": dict(stamp_ns=5, open=True, task="pick up the red cube", number=3, opened_ns=2, discard_armed=False,
                         kept=1, discarded=1),
    "TeleopState": dict(stamp_ns=1, estop_latched=False, release_armed=False, arms_paused=True, left_clutched=False, right_clutched=True,
                        left_slow=False, right_slow=False, left_pinch="full", right_pinch="fine", reset_count=0,
                        events=["arms_paused:menu"], driver="policy"),
    "JointCommands": dict(stamp_ns=1, names=NAMES, q_ref=[0.1, 0.2], dq_ref=[0.0, 0.0], status="ok"),
    "JointState": dict(stamp_ns=1, names=NAMES, position=[0.1, 0.2], velocity=[0.0, 0.0], effort=[]),
    "WheelCommands": dict(stamp_ns=1, left=1344, back=0, right=-1344),
    "Odometry": dict(stamp_ns=1, frame_id="odom", child_frame_id="base_link", x=1.0, y=2.0, yaw=0.5, vx=0.1, vy=0.0, wz=0.0),
    "LiftState": dict(stamp_ns=1, height_m=0.3, velocity_m_s=0.0, homed=True),
    "LaserScan": dict(stamp_ns=1, frame_id="lidar_front", angle_min=-math.pi, angle_max=math.pi, angle_increment=0.0174,
                      time_increment=1e-4, scan_time=0.18, range_min=0.15, range_max=12.0,
                      ranges=[1.0, float("inf"), float("nan")], intensities=[10.0, 0.0, 0.0]),
    "OpticalFlow": dict(stamp_ns=1, frame_id="flow_sensor", flow_rate_x=0.1, flow_rate_y=-0.2, quality=200,
                        ground_distance_m=0.05, integration_time_s=0.01),
    "Gyro": dict(stamp_ns=1, frame_id="base_link", angular_velocity=[0.0, 0.0, 0.3]),
    "PoseEstimate": dict(stamp_ns=1, frame_id="odom", x=0.0, y=0.0, yaw=0.0, vx=0.0, vy=0.0, wz=0.0,
                         covariance=list(np.eye(3).ravel()), source="onboard"),
    "MocapPose": dict(stamp_ns=1, frame_id="world", rigid_body_id=1, name="robot", position=[float("nan")] * 3,
                      orientation=[float("nan")] * 4, tracking_valid=False, mean_error_m=0.0, frame_number=12),
    "GroundTruth": dict(stamp_ns=1, frame_id="world", x=0.0, y=0.0, yaw=0.0, vx=0.0, vy=0.0, wz=0.0, lift_height_m=0.1,
                        joint_names=NAMES, joint_position=[0.0, 0.1], joint_velocity=[0.0, 0.0]),
    "ObjectPoses": dict(stamp_ns=1, frame_id="world", names=["cube_red", "cylinder"], x=[0.56, 0.2], y=[-1.47, -1.47],
                        z=[0.42, 0.44], qx=[0.0, 0.0], qy=[0.0, 0.0], qz=[0.0, 0.0], qw=[1.0, 1.0]),
    "Diagnostics": dict(stamp_ns=1, node="sim", level="ok", message="", received=1, sent=2, rejected=0, clamped=0, dropped=0,
                        last_error="", details_json="{}"),
    "RecorderStatus": dict(stamp_ns=1, recording=True, messages=12, lag_ns=3_000_000),
    "CameraCalibration": dict(stamp_ns=1, camera="chest", source="v4l2", device="/dev/cam_chest", width=640, height=480,
                              rate_hz=30.0, fx=320.0, fy=320.0, cx=319.5, cy=239.5, distortion_model="plumb_bob",
                              distortion=[0.0] * 5, parent_frame="vertical_link", mount_xyz=[0.0, -0.069, 0.448],
                              mount_rpy=[1.5708, 1.5708, 0.0]),
    "InputJournal": dict(stamp_ns=1, node="ik", first_step=0, step_events=[0, 2], event_inputs=["arm_targets", "tick"],
                         event_seqs=[7, -1], step_reads=[1, 2], clock_ns=[1_700_000_000_000_000_001, 2, 3],
                         outputs=["joint_commands"], output_counts=[4]),
}


def test_every_kind_has_a_sample() -> None:
    assert set(SAMPLES) == set(m.KINDS)


@pytest.mark.parametrize("kind", sorted(SAMPLES))
def test_round_trip(kind: str) -> None:
    arr = m.encode(kind, SAMPLES[kind])
    assert isinstance(arr, pa.StructArray) and len(arr) == 1 and arr.type == m.schema(kind)
    back = m.decode(kind, arr)
    assert set(back) == set(SAMPLES[kind])
    for key, value in SAMPLES[kind].items():
        got = back[key]
        if isinstance(value, dict):
            assert set(got) == set(value)
        elif isinstance(value, (list, np.ndarray)) and not (value and isinstance(value[0], str)):
            np.testing.assert_array_equal(np.asarray(got, dtype=float), np.asarray(value, dtype=float))
        else:
            assert got == value


def expect_error(kind: str, msg: dict, match: str) -> None:
    with pytest.raises(m.MessageError, match=match):
        m.encode(kind, msg)


def test_missing_and_unknown_fields_are_rejected() -> None:
    msg = dict(SAMPLES["BaseCommand"])
    del msg["yaw_rad_s"]
    expect_error("BaseCommand", msg, "missing fields")
    expect_error("BaseCommand", dict(SAMPLES["BaseCommand"], turbo=True), "unknown fields")


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_scalars_and_lists_are_rejected(bad: float) -> None:
    expect_error("BaseCommand", dict(SAMPLES["BaseCommand"], forward_m_s=bad), "not finite")
    expect_error("JointState", dict(SAMPLES["JointState"], position=[0.0, bad]), "NaN or Inf")
    expect_error("XrControllers", dict(SAMPLES["XrControllers"], left=hand(position=[0, bad, 0])), "NaN or Inf")


def test_scan_ranges_may_hold_rep117_values_but_not_bad_geometry() -> None:
    m.encode("LaserScan", SAMPLES["LaserScan"])  # inf and nan ranges are legal
    expect_error("LaserScan", dict(SAMPLES["LaserScan"], range_min=13.0), "range_min")
    expect_error("LaserScan", dict(SAMPLES["LaserScan"], intensities=[1.0]), "does not match ranges")


def test_wrong_lengths_are_rejected() -> None:
    expect_error("JointState", dict(SAMPLES["JointState"], position=[0.1]), "does not match names")
    expect_error("Gyro", dict(SAMPLES["Gyro"], angular_velocity=[0.0, 0.0]), "expected length 3")
    expect_error("ArmTargets", dict(SAMPLES["ArmTargets"], left=arm_target(position=[0, 0])), "expected length 3")
    expect_error("PoseEstimate", dict(SAMPLES["PoseEstimate"], covariance=[0.0] * 4), "expected length 9")


def test_joint_name_rules() -> None:
    expect_error("JointState", dict(SAMPLES["JointState"], names=["a", "a"]), "duplicate names")
    expect_error("JointState", dict(SAMPLES["JointState"], names=["a", ""]), "non-empty")
    expect_error("JointState", dict(SAMPLES["JointState"], names=[], position=[], velocity=[], effort=[]), "empty name list")
    m.require_joint_names(["b", "a"], ["a", "b"])
    with pytest.raises(m.MessageError, match="unknown joint names"):
        m.require_joint_names(["a", "c"], ["a", "b"])
    with pytest.raises(m.MessageError, match="missing joint names"):
        m.require_joint_names(["a"], ["a", "b"])
    m.require_joint_names(["a"], ["a", "b"], subset_ok=True)


def test_wrong_types_are_rejected() -> None:
    expect_error("LiftState", dict(SAMPLES["LiftState"], homed=1), "expected bool")
    expect_error("WheelCommands", dict(SAMPLES["WheelCommands"], left=1.5), "expected int")
    expect_error("WheelCommands", dict(SAMPLES["WheelCommands"], left=40000), "WheelCommands")  # int16 overflow
    expect_error("Odometry", dict(SAMPLES["Odometry"], frame_id=3), "expected str")
    expect_error("BaseCommand", dict(SAMPLES["BaseCommand"], forward_m_s="fast"), "expected float")


def test_quaternions_must_be_unit_length() -> None:
    expect_error("ArmTargets", dict(SAMPLES["ArmTargets"], left=arm_target(orientation=[0, 0, 0, 2])), "unit length")
    valid_mocap = dict(SAMPLES["MocapPose"], tracking_valid=True, position=[1.0, 2.0, 0.0], orientation=[0, 0, 0.6, 0.6])
    expect_error("MocapPose", valid_mocap, "unit length")
    expect_error("MocapPose", dict(valid_mocap, position=[float("nan")] * 3), "not finite")


def test_decode_rejects_foreign_arrays() -> None:
    with pytest.raises(m.MessageError, match="wrong Arrow type"):
        m.decode("JointState", m.encode("BaseCommand", SAMPLES["BaseCommand"]))
    with pytest.raises(m.MessageError, match="wrong Arrow type"):
        m.decode("JointState", pa.array([1.0, 2.0]))
    with pytest.raises(m.MessageError, match="expected a pyarrow Array"):
        m.decode("JointState", b"bytes")
    two = pa.concat_arrays([m.encode("LiftCommand", SAMPLES["LiftCommand"])] * 2)
    with pytest.raises(m.MessageError, match="exactly one"):
        m.decode("LiftCommand", two)


def test_decode_validates_what_another_sender_built() -> None:
    # a sender that bypassed encode(): right Arrow type, contract-breaking content
    row = dict(SAMPLES["JointState"], names=["a", "a"], position=[0.0, 0.0], velocity=[], effort=[])
    arr = pa.array([row], type=m.schema("JointState"))
    with pytest.raises(m.MessageError, match="duplicate"):
        m.decode("JointState", arr)
    row = dict(SAMPLES["LiftCommand"])
    arr = pa.array([dict(row, velocity_m_s=None)], type=m.schema("LiftCommand"))
    with pytest.raises(m.MessageError, match="null"):
        m.decode("LiftCommand", arr)
    arr = pa.array([dict(SAMPLES["JointState"], position=[0.0, float("nan")])], type=m.schema("JointState"))
    with pytest.raises(m.MessageError, match="NaN"):
        m.decode("JointState", arr)


def test_images_round_trip_through_metadata() -> None:
    img = np.arange(4 * 3 * 3, dtype=np.uint8).reshape(4, 3, 3)
    meta = m.image_metadata(width=3, height=4, encoding="rgb8", camera="chest", stamp_ns=5, fx=1, fy=1, cx=1.5, cy=2)
    out = m.decode_image(pa.array(img.ravel()), meta)
    np.testing.assert_array_equal(out, img)
    with pytest.raises(m.MessageError, match="bytes"):
        m.decode_image(pa.array(img.ravel()[:-1]), meta)
    with pytest.raises(m.MessageError, match="encoding"):
        m.image_metadata(width=3, height=4, encoding="yuv", camera="c", stamp_ns=0, fx=1, fy=1, cx=0, cy=0)


def test_journal_clock_values_keep_every_nanosecond() -> None:
    # float64 would round ns timestamps of today to 256 ns steps
    msg = dict(SAMPLES["InputJournal"], clock_ns=[1_800_000_000_000_000_001, 1, 2])
    assert m.decode("InputJournal", m.encode("InputJournal", msg))["clock_ns"].tolist() == msg["clock_ns"]


@pytest.mark.parametrize("change, why", [
    (dict(step_events=[0, 3]), "step_events"),
    (dict(step_reads=[1, 1]), "step_reads"),
    (dict(event_seqs=[7]), "does not match"),
    (dict(clock_ns=[1.5, 2, 3]), "integers"),
])
def test_journal_counts_must_agree(change, why) -> None:
    with pytest.raises(m.MessageError, match=why):
        m.encode("InputJournal", dict(SAMPLES["InputJournal"], **change))
