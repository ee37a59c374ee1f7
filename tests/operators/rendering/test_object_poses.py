"""Posing the scene's free objects in a render model from ObjectPoses."""

from __future__ import annotations

import math

import mujoco
import numpy as np

from teledora import models
from teledora.operators.rendering.object_poses import free_body_qpos_addresses, write_object_poses


def _scene():
    return mujoco.MjModel.from_xml_path(str(models.path(models.load_profile().scene)))


def _msg(names, xyz, quat_xyzw):
    return {"names": list(names), "x": [p[0] for p in xyz], "y": [p[1] for p in xyz], "z": [p[2] for p in xyz],
            "qx": [q[0] for q in quat_xyzw], "qy": [q[1] for q in quat_xyzw], "qz": [q[2] for q in quat_xyzw],
            "qw": [q[3] for q in quat_xyzw]}


def test_the_scene_objects_are_the_free_bodies() -> None:
    assert {"cube_red", "cube_blue", "cube_green", "cylinder"} <= set(free_body_qpos_addresses(_scene()))


def test_a_written_pose_is_where_mujoco_puts_the_body() -> None:
    model = _scene()
    data = mujoco.MjData(model)
    s = math.sqrt(0.5)
    unknown = write_object_poses(data.qpos, free_body_qpos_addresses(model),
                                 _msg(["cube_red"], [(0.61, -1.27, 0.42)], [(0.0, 0.0, 2 * s, 2 * s)]))  # unnormalised
    mujoco.mj_forward(model, data)
    assert unknown == []
    np.testing.assert_allclose(data.body("cube_red").xpos, [0.61, -1.27, 0.42], atol=1e-12)
    # 90 deg about z: the body's x axis points along world y
    np.testing.assert_allclose(data.body("cube_red").xmat.reshape(3, 3)[:, 0], [0.0, 1.0, 0.0], atol=1e-12)


def test_unknown_names_and_invalid_poses_are_returned_and_leave_qpos_alone() -> None:
    model = _scene()
    data = mujoco.MjData(model)
    before = data.qpos.copy()
    unknown = write_object_poses(
        data.qpos, free_body_qpos_addresses(model),
        _msg(["no_such_body", "cube_blue", "cube_green"], [(1, 2, 3), (float("nan"), 0, 0), (0, 0, 0)],
             [(0, 0, 0, 1), (0, 0, 0, 1), (0, 0, 0, 0)]))
    assert unknown == ["no_such_body", "cube_blue", "cube_green"]
    np.testing.assert_array_equal(data.qpos, before)
