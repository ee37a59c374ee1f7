"""The MCAP export read back with the `mcap` reader and the Protobuf decoder:
Foxglove schemas by name, frame ids, a transform chain that resolves from the
world to every link, exact timestamps and Inf/NaN kept apart.

The run is synthesised with the run writer (the topics a sim run records, at
odd nanosecond stamps); tests/dataflows/test_sim_dataflow.py exports a real
demo run too.
"""

from __future__ import annotations

import dataclasses
import json
import math

import cv2
import mujoco
import numpy as np
import pyarrow as pa
import pytest
from mcap.reader import make_reader
from mcap_protobuf.decoder import DecoderFactory

from teledora import models
from teledora.operators.contract.messages import encode, image_metadata
from teledora.operators.scene.robot_frames import RobotFrames, Transform, compose, resolve
from teledora.recording import RunReader, RunWriter
from teledora.recording.mcap_export import export_mcap, foxglove_layout

T0 = 1_800_000_000_123_456_789  # > 2**53, odd nanoseconds
MS = 1_000_000
PROFILE = models.load_profile()
ARM = list(PROFILE.arm_joint_names)


def _odom(i: int) -> dict:
    return {"stamp_ns": T0 + i * 20 * MS + 1, "frame_id": "odom", "child_frame_id": "base_link",
            "x": 0.02 * i, "y": 0.01 * i, "yaw": 0.05 * i, "vx": 0.2, "vy": 0.0, "wz": 0.5}


def _scan(frame: str, stamp: int) -> pa.StructArray:
    return encode("LaserScan", {
        "stamp_ns": stamp, "frame_id": frame, "angle_min": -math.pi, "angle_max": math.pi - 2 * math.pi / 8,
        "angle_increment": 2 * math.pi / 8, "time_increment": 0.0, "scan_time": 0.1, "range_min": 0.15, "range_max": 12.0,
        "ranges": [1.0, float("inf"), float("nan"), float("-inf"), 2.5, 3.0, float("nan"), float("inf")],
        "intensities": [47.0] * 8,
    })


def write_sim_like_run(path) -> dict:
    """A one-second run with the topics of a sim demo; returns what was written."""
    w = RunWriter(path, {"dataflow_path": "sim.yml"}, start_ns=T0 - 5 * MS)
    joints = {}
    for i in range(50):
        o = _odom(i)
        w.append("base__odom", encode("Odometry", o), {}, recv_ns=o["stamp_ns"] + 3)
        w.append("lift__state", encode("LiftState", {"stamp_ns": o["stamp_ns"] + 2, "height_m": 0.004 * i,
                                                      "velocity_m_s": 0.2, "homed": True}), {}, recv_ns=o["stamp_ns"] + 4)
        joints = {n: 0.01 * i * (k % 3 - 1) for k, n in enumerate(ARM)}
        w.append("arms__joint_states", encode("JointState", {"stamp_ns": o["stamp_ns"] + 5, "names": ARM,
                                                              "position": list(joints.values()), "velocity": [], "effort": []}),
                 {}, recv_ns=o["stamp_ns"] + 6)
        w.append("ekf__pose", encode("PoseEstimate", {"stamp_ns": o["stamp_ns"] + 7, "frame_id": "odom", "x": o["x"], "y": o["y"],
                                                        "yaw": o["yaw"], "vx": 0.2, "vy": 0.0, "wz": 0.5,
                                                        "covariance": list(np.eye(3).ravel() * 1e-4), "source": "onboard"}),
                 {}, recv_ns=o["stamp_ns"] + 8)
        valid = i != 10
        w.append("mocap__pose", encode("MocapPose", {
            "stamp_ns": o["stamp_ns"] + 9, "frame_id": "world", "rigid_body_id": 1, "name": "base",
            "position": [o["x"], o["y"], 0.0] if valid else [float("nan")] * 3,
            "orientation": [0.0, 0.0, math.sin(o["yaw"] / 2), math.cos(o["yaw"] / 2)] if valid else [float("nan")] * 4,
            "tracking_valid": valid, "mean_error_m": 0.0005, "frame_number": i}), {}, recv_ns=o["stamp_ns"] + 10)
        w.append("sim__ground_truth", encode("GroundTruth", {
            "stamp_ns": o["stamp_ns"] + 11, "frame_id": "world", "x": o["x"], "y": o["y"], "yaw": o["yaw"], "vx": 0.2, "vy": 0.0,
            "wz": 0.5, "lift_height_m": 0.004 * i, "joint_names": ARM, "joint_position": list(joints.values()),
            "joint_velocity": [0.0] * len(ARM)}), {}, recv_ns=o["stamp_ns"] + 12)
        if i % 10 == 0:
            w.append("lidar_front__scan", _scan("lidar_front", o["stamp_ns"] + 13), {}, recv_ns=o["stamp_ns"] + 14)
            w.append("scan_merger__scan", _scan("base_link", o["stamp_ns"] + 15), {}, recv_ns=o["stamp_ns"] + 16)
        if i % 25 == 0:
            img = np.zeros((24, 32, 3), np.uint8)
            img[:, :16] = (255, 0, 0)
            meta = image_metadata(width=32, height=24, encoding="rgb8", camera="chest", stamp_ns=o["stamp_ns"] + 17,
                                  fx=30.0, fy=30.0, cx=15.5, cy=11.5)
            w.append("cameras__chest", pa.array(img.ravel()), meta, recv_ns=o["stamp_ns"] + 18)
    w.close(T0 + 1100 * MS)
    return {"last_odom": _odom(49), "joints": joints, "lift": 0.004 * 49}


def read_back(path) -> dict[str, list[tuple[str, str, object, int]]]:
    """channel -> [(schema name, message encoding, decoded message, log time)]"""
    factory = DecoderFactory()
    out: dict[str, list] = {}
    with open(path, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages(log_time_order=False):
            if channel.message_encoding == "json":
                body = json.loads(message.data)
            else:
                body = factory.decoder_for(channel.message_encoding, schema)(message.data)
            out.setdefault(channel.topic, []).append((schema.name, channel.message_encoding, body, message.log_time))
    return out


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    d = tmp_path_factory.mktemp("mcap")
    written = write_sim_like_run(d / "run")
    counts = export_mcap(RunReader(d / "run"), d / "run.mcap")
    return read_back(d / "run.mcap"), counts, written


def _ns(stamp) -> int:
    return stamp.seconds * 1_000_000_000 + stamp.nanos


def test_channels_by_schema_name(exported):
    channels, counts, _ = exported
    schemas = {topic: {row[0] for row in rows} for topic, rows in channels.items()}
    assert all(len(s) == 1 for s in schemas.values()), schemas
    schema = {topic: s.pop() for topic, s in schemas.items()}
    assert schema["/tf"] == "foxglove.FrameTransforms"
    assert schema["/foxglove/robot"] == "foxglove.SceneUpdate"
    assert schema["/foxglove/room"] == "foxglove.SceneUpdate"
    assert schema["/foxglove/lidar_front/scan"] == schema["/foxglove/scan_merger/scan"] == "foxglove.LaserScan"
    for topic in ("/foxglove/base/odom", "/foxglove/ekf/pose", "/foxglove/mocap/pose", "/foxglove/sim/ground_truth"):
        assert schema[topic] == "foxglove.PoseInFrame", topic
        assert schema[f"{topic}/path"] == "foxglove.PosesInFrame", topic
    assert schema["/foxglove/cameras/chest"] == "foxglove.CompressedImage"
    assert schema["/foxglove/cameras/chest/calib"] == "foxglove.CameraCalibration"
    assert schema["/cameras/chest"] == "foxglove.RawImage"
    # the plain-data channels stay, one per recorded topic
    assert schema["/base/odom"] == "teledora.msgs.Odometry" and schema["/lidar_front/scan"] == "teledora.msgs.LaserScan"
    assert {t: len(rows) for t, rows in channels.items()} == counts
    assert counts["/base/odom"] == counts["/foxglove/base/odom"] == 50
    assert counts["/foxglove/mocap/pose"] == 49  # the frame without tracking draws nothing
    assert counts["/mocap/pose"] == 50
    # one static /tf, one per odometry, one per joint state, one per lift state
    assert counts["/tf"] == 1 + 50 + 50 + 50


def _frames_at_end(channels) -> list[Transform]:
    latest: dict[str, Transform] = {}
    for _, _, msg, _ in channels["/tf"]:
        for t in msg.transforms:
            latest[t.child_frame_id] = Transform(
                t.parent_frame_id, t.child_frame_id, (t.translation.x, t.translation.y, t.translation.z),
                (t.rotation.x, t.rotation.y, t.rotation.z, t.rotation.w))
    return list(latest.values())


def test_every_frame_resolves_to_world_through_odom_and_base(exported):
    channels, _, _ = exported
    tfs = _frames_at_end(channels)
    model = mujoco.MjModel.from_xml_path(str(models.path(PROFILE.scene)))
    expected = set(RobotFrames(model, PROFILE).frames)
    assert {"left_Upper_Arm", "right_Moving_Jaw", "vertical_link", "lidar_front", "lidar_back", "chest", "left_grip"} <= expected
    used = {"base_link"} | expected
    for _, _, update, _ in channels["/foxglove/robot"]:
        used |= {e.frame_id for e in update.entities}
    for topic in ("/foxglove/lidar_front/scan", "/foxglove/scan_merger/scan", "/foxglove/cameras/chest",
                  "/foxglove/cameras/chest/calib", "/foxglove/base/odom", "/foxglove/ekf/pose"):
        used |= {row[2].frame_id for row in channels[topic]}
    for frame in used:
        chain = resolve(tfs, "world", frame)
        if frame == "odom":
            assert [(t.parent, t.child) for t in chain] == [("world", "odom")]
        else:
            assert [(t.parent, t.child) for t in chain[:2]] == [("world", "odom"), ("odom", "base_link")], frame


def test_the_static_world_to_odom_transform_names_the_profiles_frames(tmp_path):
    write_sim_like_run(tmp_path / "run")
    profile = dataclasses.replace(PROFILE, world_frame="map_b", odom_frame="odom_b")
    export_mcap(RunReader(tmp_path / "run"), tmp_path / "run.mcap", ["base__odom"], profile=profile)
    static = read_back(tmp_path / "run.mcap")["/tf"][0][2]
    assert ("map_b", "odom_b") in {(t.parent_frame_id, t.child_frame_id) for t in static.transforms}


def test_the_layout_follows_the_base_frame_in_the_world_frame_it_is_given():
    config = json.loads(foxglove_layout({}, "map_b", "chassis_b"))["content"]["items"][0]["content"]["config"]
    assert (config["fixedFrame"], config["followTf"]) == ("map_b", "chassis_b")


def test_the_exported_chain_places_links_where_mujoco_does(exported):
    """world → left_grip through the exported transforms equals MuJoCo's own
    forward kinematics at the last odometry pose, joint state and lift height."""
    channels, _, written = exported
    tfs = _frames_at_end(channels)
    model = mujoco.MjModel.from_xml_path(str(models.path(PROFILE.scene)))
    data = mujoco.MjData(model)
    o = written["last_odom"]
    for name, v in zip(PROFILE.base_joints, (o["x"], o["y"], o["yaw"])):
        data.qpos[model.joint(name).qposadr[0]] = v
    for name, v in written["joints"].items():
        data.qpos[model.joint(name).qposadr[0]] = v
    data.qpos[model.joint(PROFILE.lift_joint).qposadr[0]] = PROFILE.lift_height_to_joint(written["lift"])
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    mujoco.mj_camlight(model, data)
    for site in ("left_grip", "right_grip", "lidar_front"):
        p, r = compose(resolve(tfs, "world", site))
        np.testing.assert_allclose(p, data.site(site).xpos, atol=1e-9)
        np.testing.assert_allclose(r, data.site(site).xmat.reshape(3, 3), atol=1e-9)
    # cameras are optical frames: z along the view (MuJoCo's -z), y down (MuJoCo's -y)
    p, r = compose(resolve(tfs, "world", "chest"))
    np.testing.assert_allclose(p, data.cam("chest").xpos, atol=1e-9)
    cam = data.cam("chest").xmat.reshape(3, 3)
    np.testing.assert_allclose(r[:, 2], -cam[:, 2], atol=1e-9)
    np.testing.assert_allclose(r[:, 1], -cam[:, 1], atol=1e-9)


def test_scans_keep_inf_and_nan_apart_with_angles_and_exact_stamps(exported):
    channels, _, _ = exported
    first = channels["/foxglove/lidar_front/scan"][0][2]
    assert first.frame_id == "lidar_front"
    assert _ns(first.timestamp) == T0 + 1 + 13
    assert first.start_angle == pytest.approx(-math.pi) and first.end_angle == pytest.approx(math.pi - 2 * math.pi / 8)
    r = np.array(first.ranges)
    assert r[0] == 1.0 and np.isposinf(r[1]) and np.isnan(r[2]) and np.isneginf(r[3]) and np.isnan(r[6]) and np.isposinf(r[7])
    assert channels["/foxglove/scan_merger/scan"][0][2].frame_id == "base_link"
    plain = channels["/lidar_front/scan"][0][2]
    assert plain["ranges"] == [1.0, "inf", "nan", "-inf", 2.5, 3.0, "nan", "inf"]
    assert plain["stamp_ns"] == str(T0 + 1 + 13)
    assert plain["timestamp"] == {"sec": (T0 + 14) // 10**9, "nsec": (T0 + 14) % 10**9}


def test_poses_and_timestamps_exact_to_the_nanosecond(exported):
    channels, _, written = exported
    odom = [row[2] for row in channels["/foxglove/base/odom"]]
    assert [_ns(p.timestamp) for p in odom] == [T0 + i * 20 * MS + 1 for i in range(50)]
    last = odom[-1]
    o = written["last_odom"]
    assert last.frame_id == "odom" and last.pose.position.x == pytest.approx(o["x"]) and last.pose.position.y == pytest.approx(o["y"])
    assert 2 * math.atan2(last.pose.orientation.z, last.pose.orientation.w) == pytest.approx(o["yaw"])
    assert {row[2].frame_id for row in channels["/foxglove/mocap/pose"]} == {"world"}
    assert {row[2].frame_id for row in channels["/foxglove/sim/ground_truth"]} == {"world"}
    assert {row[2].frame_id for row in channels["/foxglove/ekf/pose"]} == {"odom"}
    path = channels["/foxglove/base/odom/path"][-1][2]
    assert path.frame_id == "odom" and len(path.poses) == 11  # every 0.1 s of a 0.98 s run, and the last
    assert path.poses[-1].position.x == pytest.approx(o["x"]) and _ns(path.timestamp) == _ns(last.timestamp)
    plain = [row[2] for row in channels["/base/odom"]]
    assert [int(p["stamp_ns"]) for p in plain] == [T0 + i * 20 * MS + 1 for i in range(50)]
    assert [row[3] for row in channels["/base/odom"]] == [T0 + i * 20 * MS + 4 for i in range(50)]  # log time = receive time
    odom_tf = [t for _, _, m, _ in channels["/tf"] for t in m.transforms if t.child_frame_id == "base_link"]
    assert [_ns(t.timestamp) for t in odom_tf] == [T0 + i * 20 * MS + 1 for i in range(50)]


def test_images_compressed_with_calibration(exported):
    channels, _, _ = exported
    img = channels["/foxglove/cameras/chest"][0][2]
    assert img.format == "jpeg" and img.frame_id == "chest" and _ns(img.timestamp) == T0 + 1 + 17
    bgr = cv2.imdecode(np.frombuffer(img.data, np.uint8), cv2.IMREAD_COLOR)
    assert bgr.shape == (24, 32, 3) and bgr[5, 3, 2] > 200 and bgr[5, 3, 0] < 50 and bgr[5, 28].max() < 50  # red left half
    cal = channels["/foxglove/cameras/chest/calib"][0][2]
    assert cal.frame_id == "chest" and (cal.width, cal.height) == (32, 24)
    assert list(cal.K) == [30.0, 0.0, 15.5, 0.0, 30.0, 11.5, 0.0, 0.0, 1.0]
    assert list(cal.P) == [30.0, 0.0, 15.5, 0.0, 0.0, 30.0, 11.5, 0.0, 0.0, 0.0, 1.0, 0.0]
    raw = channels["/cameras/chest"][0][2]
    assert raw.encoding == "rgb8" and raw.step == 96 and len(raw.data) == 24 * 32 * 3


def test_scene_has_a_body_entity_per_visible_link_and_the_room(exported):
    channels, _, _ = exported
    (robot,) = [row[2] for row in channels["/foxglove/robot"]]
    frames = {e.frame_id for e in robot.entities}
    assert {"base_link", "chassis", "left_Upper_Arm", "right_Moving_Jaw"} <= frames
    assert all(e.frame_locked for e in robot.entities)
    n = sum(len(e.cubes) + len(e.spheres) + len(e.cylinders) + len(e.triangles) for e in robot.entities)
    assert n >= 30
    (room,) = [row[2] for row in channels["/foxglove/room"]]
    assert {e.frame_id for e in room.entities} == {"world"}
    room_entity = room.entities[0]
    assert len(room_entity.cubes) == 8 and len(room_entity.cylinders) == 1  # floor, 4 walls, 2 tables, the stand; the pillar
