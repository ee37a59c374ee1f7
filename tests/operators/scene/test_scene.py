"""operators/scene: geoms to primitives, messages to poses, the frame tree."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.operators.scene.message_poses import camera_intrinsics, pose_of, scan_of
from teledora.operators.scene.model_geometry import body_shapes
from teledora.operators.scene.robot_frames import RobotFrames, compose, resolve

SHAPES_XML = """
<mujoco>
  <asset>
    <mesh name="tet" vertex="0 0 0  1 0 0  0 1 0  0 0 1"/>
    <material name="red" rgba="1 0 0 1"/>
  </asset>
  <worldbody>
    <body name="b" pos="1 0 0">
      <geom name="box" type="box" size="0.1 0.2 0.3" material="red"/>
      <geom name="cap" type="capsule" size="0.05 0.2" pos="0 0 1"/>
      <geom name="cyl" type="cylinder" size="0.05 0.2" rgba="0 1 0 1"/>
      <geom name="ghost" type="box" size="1 1 1" group="3"/>
      <geom name="tet" type="mesh" mesh="tet"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_geoms_become_primitives_with_full_extents_and_colours():
    model = mujoco.MjModel.from_xml_string(SHAPES_XML)
    (shapes,) = body_shapes(model)
    by_name = {p.name: p for p in shapes.primitives}
    assert shapes.frame == "b"
    assert "ghost" not in by_name  # collision-only group 3
    assert by_name["box"].kind == "cube" and by_name["box"].size == pytest.approx((0.2, 0.4, 0.6))
    assert by_name["box"].rgba == (1.0, 0.0, 0.0, 1.0)
    assert by_name["cyl"].kind == "cylinder" and by_name["cyl"].size == pytest.approx((0.1, 0.1, 0.4))
    assert by_name["cap"].kind == "cylinder"
    ends = sorted(by_name[f"cap_end{i}"].position[2] for i in (0, 1))
    assert ends == pytest.approx([0.8, 1.2]) and by_name["cap_end0"].size == pytest.approx((0.1, 0.1, 0.1))
    tet = by_name["tet"]
    assert tet.kind == "triangles" and tet.points.shape == (12, 3)  # 4 faces, 3 vertices each


def test_pose_of_each_kind_and_mocap_without_tracking():
    planar = {"frame_id": "odom", "x": 1.0, "y": 2.0, "yaw": math.pi / 2}
    p = pose_of("Odometry", planar)
    assert p.frame == "odom" and p.position == (1.0, 2.0, 0.0)
    assert p.orientation == pytest.approx((0.0, 0.0, math.sqrt(0.5), math.sqrt(0.5)))
    assert pose_of("GroundTruth", dict(planar, frame_id="world")).frame == "world"
    lost = {"frame_id": "world", "position": [math.nan] * 3, "orientation": [math.nan] * 4, "tracking_valid": False}
    assert pose_of("MocapPose", lost) is None
    with pytest.raises(ValueError):
        pose_of("LiftState", {})


def test_scan_angles_and_untouched_ranges():
    s = scan_of({"frame_id": "lidar_back", "angle_min": -1.0, "angle_increment": 0.5, "ranges": [1.0, math.inf, math.nan],
                 "intensities": []})
    assert (s.start_angle, s.end_angle) == (-1.0, 0.0)
    assert s.ranges[0] == 1.0 and np.isposinf(s.ranges[1]) and np.isnan(s.ranges[2])


def test_intrinsics_need_every_number():
    meta = {"fx": 10.0, "fy": 11.0, "cx": 3.0, "cy": 2.0, "width": 6, "height": 4, "camera": "chest"}
    k = camera_intrinsics(meta)
    assert k.k == (10.0, 0.0, 3.0, 0.0, 11.0, 2.0, 0.0, 0.0, 1.0) and k.frame == "chest"
    assert camera_intrinsics({k: v for k, v in meta.items() if k != "fy"}) is None
    assert camera_intrinsics(dict(meta, fx=math.nan)) is None


def test_frame_tree_matches_forward_kinematics_and_joint_changes_move_links():
    profile = models.load_profile()
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    frames = RobotFrames(model, profile)
    frames.set_joints({"left_elbow_flex": 0.7, "no_such_joint": 1.0, "base_x": 5.0})  # base joints are odometry's
    frames.set_lift_height(0.25)
    tfs = frames.transforms()
    data = mujoco.MjData(model)
    data.qpos[model.joint("left_elbow_flex").qposadr[0]] = 0.7
    data.qpos[model.joint(profile.lift_joint).qposadr[0]] = profile.lift_height_to_joint(0.25)
    mujoco.mj_kinematics(model, data)
    mujoco.mj_comPos(model, data)
    mujoco.mj_camlight(model, data)  # camera poses
    for name in ("left_Moving_Jaw", "right_Upper_Arm"):
        p, r = compose(resolve(tfs, "base_link", name))
        np.testing.assert_allclose(p, data.body(name).xpos, atol=1e-12)
        np.testing.assert_allclose(r, data.body(name).xmat.reshape(3, 3), atol=1e-12)
    p, r = compose(resolve(tfs, "base_link", "left_grip"))  # a site
    np.testing.assert_allclose(p, data.site("left_grip").xpos, atol=1e-12)
    np.testing.assert_allclose(r, data.site("left_grip").xmat.reshape(3, 3), atol=1e-12)
    p, r = compose(resolve(tfs, "base_link", "left_wrist"))  # a camera, optical: MuJoCo's y and z flipped
    np.testing.assert_allclose(p, data.cam("left_wrist").xpos, atol=1e-12)
    np.testing.assert_allclose(r, data.cam("left_wrist").xmat.reshape(3, 3) @ np.diag([1.0, -1.0, -1.0]), atol=1e-12)
    assert set(frames.frames) == {t.child for t in tfs}
    with pytest.raises(KeyError):
        resolve(tfs, "base_link", "nowhere")
