"""The view mapping: scans in their frames, trajectories, decimation, kinds, robot poses."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora import models
from teledora.models.config_files import load_renderer_config, load_viewer_config
from teledora.operators.contract.messages import encode, image_metadata
from teledora.operators.viewing import view_mapping as vm
from teledora.operators.viewing.robot_geometry import RobotPoser, bodies_to_show, model_shapes
from teledora.operators.viewing.viewer_config import ViewerConfig, ViewRates

T0 = 1_800_000_000_000_000_000
MS = 1_000_000
BASE_FRAME = models.load_profile().base_frame


def every_message_config() -> ViewerConfig:
    config = load_viewer_config()
    return dataclasses.replace(config, rates_hz=ViewRates(0.0, 0.0, 0.0, 0.0, 0.0, 0.0))


@pytest.fixture(scope="module")
def binding() -> vm.RobotBinding:
    renderer = load_renderer_config()
    model = mujoco.MjModel.from_xml_path(str(models.path(renderer.model.path)))
    m = renderer.model
    return vm.RobotBinding(RobotPoser(model, m.base_joints, m.lift_joint, m.base_yaw_offset_rad), model_shapes(model),
                           models.load_profile().lift_height_to_joint)


def scan(ranges, frame="lidar_front", stamp=T0) -> dict:
    return {"stamp_ns": stamp, "frame_id": frame, "angle_min": 0.0, "angle_max": math.pi / 2 * (len(ranges) - 1),
            "angle_increment": math.pi / 2, "time_increment": 0.0, "scan_time": 0.1, "range_min": 0.15,
            "range_max": 12.0, "ranges": np.asarray(ranges, dtype=np.float32), "intensities": np.zeros(0, np.float32)}


def test_scan_points_keep_only_valid_returns_in_the_scan_frame() -> None:
    pts = vm.scan_points(scan([1.0, np.inf, -np.inf, np.nan, 0.1, 13.0, 2.0, 3.0]))
    # beams 0, 6, 7 survive: 0 rad, 3*pi (=pi), 7*pi/2 (=-pi/2)
    np.testing.assert_allclose(pts, [[1.0, 0, 0], [-2.0, 0, 0], [0, -3.0, 0]], atol=1e-6)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.floats(width=32, allow_nan=True, allow_infinity=True)), min_size=0, max_size=50))
def test_scan_points_never_contain_non_finite_or_out_of_range_points(ranges) -> None:
    pts = vm.scan_points(scan(ranges))
    assert pts.shape[1] == 3 and np.all(np.isfinite(pts))
    norms = np.linalg.norm(pts, axis=1)
    assert np.all((norms >= 0.15 - 1e-4) & (norms <= 12.0 + 1e-4))


def test_each_scan_sits_in_its_own_frame(binding) -> None:
    mapper = vm.ViewMapper(every_message_config(), binding, BASE_FRAME)
    front = mapper.on_message("lidar_front__scan", "LaserScan", scan([1.0, 2.0]), T0)
    merged = mapper.on_message("scan_merger__scan", "LaserScan", scan([1.0, 2.0], frame="base_link"), T0)
    assert [i.path for i in front] == ["world/frames/lidar_front/lidar_front__scan"]
    assert [i.path for i in merged] == ["world/frames/base_link/scan_merger__scan"]


def test_the_base_frame_is_the_one_the_mapper_is_given(binding) -> None:
    mapper = vm.ViewMapper(every_message_config(), binding, "chassis")  # any body of the model
    unnamed = mapper.on_message("scan_merger__scan", "LaserScan", scan([1.0], frame=""), T0)
    assert [i.path for i in unnamed] == ["world/frames/chassis/scan_merger__scan"]
    odom = {"stamp_ns": T0, "frame_id": "odom", "child_frame_id": "chassis", "x": 1.0, "y": 2.0, "yaw": 0.0,
            "vx": 0.0, "vy": 0.0, "wz": 0.0}
    frames = {i.path for i in mapper.on_message("base__odom", "Odometry", odom, T0) if i.path.startswith("world/frames/")}
    assert "world/frames/chassis" in frames and f"world/frames/{BASE_FRAME}" not in frames


def test_kind_of_values() -> None:
    lift = encode("LiftState", {"stamp_ns": T0, "height_m": 0.1, "velocity_m_s": 0.0, "homed": True})
    assert vm.kind_of(lift.type, {}) == "LiftState"
    meta = image_metadata(width=2, height=1, encoding="rgb8", camera="chest", stamp_ns=T0, fx=1, fy=1, cx=1, cy=0.5)
    assert vm.kind_of(pa.uint8(), meta) == "Image"
    assert vm.kind_of(pa.uint8(), {}) is None
    assert vm.kind_of(pa.float64(), {}) is None
    kind, pixels, stamp = vm.decode_for_view(pa.array(np.arange(6, dtype=np.uint8)), meta)
    assert kind == "Image" and pixels.shape == (1, 2, 3) and stamp == T0
    gyro = encode("Gyro", {"stamp_ns": T0, "frame_id": "f", "angular_velocity": [0.0, 0.0, 0.0]})
    assert vm.decode_for_view(gyro, {}) == (None, None, None)


def test_decimation_follows_message_stamps_not_arrival() -> None:
    config = load_viewer_config()  # scalars 20 Hz
    mapper = vm.ViewMapper(config, None, BASE_FRAME)
    shown = 0
    for i in range(100):  # 100 Hz for 1 s
        msg = {"stamp_ns": T0 + i * 10 * MS, "height_m": 0.0, "velocity_m_s": 0.0, "homed": True}
        shown += bool(mapper.on_message("lift__state", "LiftState", msg, msg["stamp_ns"]))
    assert shown == pytest.approx(config.rates_hz.scalars_hz, abs=1)
    assert mapper.counts.seen["lift__state"] == 100
    assert mapper.counts.skipped["lift__state"] == 100 - shown


def test_trajectories_are_bounded_and_skip_invalid_mocap() -> None:
    config = dataclasses.replace(every_message_config(), trajectory_max_points=5)
    mapper = vm.ViewMapper(config, None, BASE_FRAME)
    for i in range(10):
        msg = {"stamp_ns": T0 + i, "frame_id": "odom", "child_frame_id": "base_link", "x": float(i), "y": 0.0,
               "yaw": 0.0, "vx": 0.0, "vy": 0.0, "wz": 0.0}
        items = mapper.on_message("base__odom", "Odometry", msg, T0 + i)
    strip = [i for i in items if isinstance(i, vm.LineStrip)][0]
    assert strip.path == "world/trajectories/odometry"
    np.testing.assert_allclose(strip.points[:, 0], [5, 6, 7, 8, 9])
    lost = {"stamp_ns": T0, "frame_id": "world", "rigid_body_id": 1, "name": "am2", "position": np.full(3, np.nan),
            "orientation": np.full(4, np.nan), "tracking_valid": False, "mean_error_m": np.nan, "frame_number": 1}
    assert mapper.on_message("mocap__pose", "MocapPose", lost, T0) == []


def test_robot_bodies_follow_odometry_lift_and_joints(binding) -> None:
    mapper = vm.ViewMapper(every_message_config(), binding, BASE_FRAME)
    bodies = bodies_to_show(binding.shapes)
    assert {"base_link", "chassis", "left_Moving_Jaw", "right_Upper_Arm"} <= set(bodies)
    statics = mapper.static_items()
    assert all(isinstance(i, vm.ShapeItem) for i in statics)
    assert {i.path.split("/")[1] for i in statics} == {"robot", "room"}
    odom = {"stamp_ns": T0, "frame_id": "odom", "child_frame_id": "base_link", "x": 1.0, "y": 2.0, "yaw": math.pi / 2,
            "vx": 0.0, "vy": 0.0, "wz": 0.0}
    items = {i.path: i for i in mapper.on_message("base__odom", "Odometry", odom, T0) if isinstance(i, vm.Transform)}
    np.testing.assert_allclose(items["world/robot/base_link"].translation[:2], [1.0, 2.0], atol=1e-9)
    np.testing.assert_allclose(items["world/frames/base_link"].quaternion_xyzw, vm.yaw_quaternion(math.pi / 2), atol=1e-9)
    assert {"world/frames/lidar_front", "world/frames/lidar_back"} <= set(items)
    heights = []
    for i, h in enumerate((0.0, 0.2)):
        lift = {"stamp_ns": T0 + 1 + i, "height_m": h, "velocity_m_s": 0.0, "homed": True}
        items = {i.path: i for i in mapper.on_message("lift__state", "LiftState", lift, T0 + 1 + i) if isinstance(i, vm.Transform)}
        heights.append(items["world/robot/vertical_link"].translation[2])
    assert heights[1] - heights[0] == pytest.approx(0.2)
    # a state on a topic that is not a configured source moves nothing
    assert not [i for i in mapper.on_message("sim__joint_states", "JointState",
                {"stamp_ns": T0, "names": ["left_shoulder_pan"], "position": np.array([1.0]), "velocity": np.zeros(0),
                 "effort": np.zeros(0)}, T0 + 2) if isinstance(i, vm.Transform)]


def test_diagnostics_become_a_level_plot_and_a_text_line() -> None:
    mapper = vm.ViewMapper(every_message_config(), None, BASE_FRAME)
    msg = {"stamp_ns": T0, "node": "arms", "level": "warn", "message": "hot servo", "received": 0, "sent": 0,
           "rejected": 0, "clamped": 0, "dropped": 0, "last_error": "", "details_json": "{}"}
    items = mapper.on_message("arms__diagnostics", "Diagnostics", msg, T0)
    assert vm.Scalar("plots/diagnostics/arms", 1.0) in items
    assert vm.Text("diagnostics/arms", "hot servo", "warn") in items


def test_negative_rates_are_refused() -> None:
    from teledora.operators.errors import ConfigError

    with pytest.raises(ConfigError, match="scans_hz"):
        ViewRates(1.0, -1.0, 1.0, 1.0, 1.0, 1.0)


def test_a_jpeg_frame_reaches_the_view_as_its_checked_bytes_and_a_bad_one_is_refused() -> None:
    from teledora.operators.contract.compressed_image import encode_jpeg
    from teledora.operators.contract.messages import MessageError

    y, x = np.mgrid[0:24, 0:32]
    data = encode_jpeg(np.stack([x * 8, y * 10, x + y], -1).astype(np.uint8))
    meta = image_metadata(width=32, height=24, encoding="jpeg", camera="chest", stamp_ns=T0, fx=30, fy=30, cx=16, cy=12)
    kind, msg, stamp = vm.decode_for_view(pa.array(data), meta)
    assert kind == "Image" and msg == data.tobytes() and stamp == T0  # the bytes as sent, not decoded
    (item,) = vm.ViewMapper(every_message_config(), None, BASE_FRAME).on_message("cameras__chest", kind, msg, stamp, meta)
    assert item == vm.EncodedImage("cameras/chest", data.tobytes(), "image/jpeg")
    with pytest.raises(MessageError, match="header says 32x24"):
        vm.decode_for_view(pa.array(data), dict(meta, width=64))
    with pytest.raises(MessageError, match="cut short"):
        vm.decode_for_view(pa.array(data[:-30]), meta)
