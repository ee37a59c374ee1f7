"""Self-filter from the robot model: an arm reaching outside the footprint polygon is not an obstacle."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import load_lidar_setup
from teledora.operators.lidar.body_filter import BodyFilterError, RobotBodyFilter
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.lidar_mounts import mount_from_site
from teledora.operators.lidar.scan_merger import ScanMerger
from tests.operators.lidar.scan_cases import BASE_FRAME

PROFILE = models.load_profile()

# lift at its lowest, left arm folded down and out: the left wrist crosses the
# lidar plane (0.17 m) at x 0.25, y 0.25, outside the 0.25 m footprint polygon
REACH = {"vertical_move": -0.3, "left_shoulder_pan": -0.34, "left_shoulder_lift": 1.32,
         "left_elbow_flex": -1.96, "left_wrist_flex": -0.54}


@pytest.fixture(scope="module")
def robot():
    setup = load_lidar_setup(None)
    model = mujoco.MjModel.from_xml_path(str(models.path(setup.model)))
    return setup, model


def cast_front_scan(model, mount, q: dict[str, float], rays: int = 720) -> LaserScan:
    """The front lidar's scan of the robot alone (no room), posed at ``q``, by MuJoCo ray casting."""
    data = mujoco.MjData(model)
    for name, value in q.items():
        data.qpos[model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)]] = value
    mujoco.mj_kinematics(model, data)
    inc = 2 * math.pi / rays
    angles = -math.pi + np.arange(rays) * inc
    ranges = np.full(rays, np.inf)
    gid = np.zeros(1, dtype=np.int32)
    for i, a in enumerate(angles):
        d = np.array([math.cos(mount.yaw + a), math.sin(mount.yaw + a), 0.0])
        start = np.array([mount.x, mount.y, mount.z]) + 0.04 * d
        r = mujoco.mj_ray(model, data, start, d, None, 1, -1, gid)
        if r >= 0:
            ranges[i] = r + 0.04
    return LaserScan(0, "lidar_front", angles[0], angles[-1], inc, 0.0, 0.18, 0.15, 12.0, ranges, np.ones(rays))


def test_an_arm_reaching_out_is_removed_at_its_current_pose(robot):
    setup, model = robot
    mount = mount_from_site(model, setup.lidars["front"].site, PROFILE.base_frame)
    scan = cast_front_scan(model, mount, REACH)
    hits = np.isfinite(scan.ranges)
    assert hits.sum() >= 5  # the lidar does see the arm
    footprint_only = ScanMerger(BASE_FRAME, {"front": mount}, setup.merger.footprint, compensation="none").merge({"front": scan}).scan
    assert np.isfinite(footprint_only.ranges).sum() >= 5  # the fixed polygon keeps the arm as an obstacle

    bodies = RobotBodyFilter(model, 0.02, PROFILE.base_frame, PROFILE.base_joints)
    bodies.set_joints(list(REACH), list(REACH.values()))
    res = ScanMerger(BASE_FRAME, {"front": mount}, setup.merger.footprint, compensation="none", body_filter=bodies).merge({"front": scan})
    assert not np.isfinite(res.scan.ranges).any()
    assert res.self_hits["front"] == scan.valid_mask().sum()  # closer than range_min is never a return


def test_the_filter_follows_the_joints(robot):
    _, model = robot
    bodies = RobotBodyFilter(model, 0.0, PROFILE.base_frame, PROFILE.base_joints)
    wrist = np.array([0.25, 0.25])
    assert not bodies.contains(wrist[:1], wrist[1:], 0.17).any()  # arms at home: nothing there
    bodies.set_joints(list(REACH), list(REACH.values()))
    assert bodies.contains(wrist[:1], wrist[1:], 0.17).all()
    assert not bodies.contains(np.array([1.0]), np.array([1.0]), 0.17).any()
    assert bodies.set_joints(["no_such_joint", "left_elbow_flex"], [0.0, float("nan")]) == 2


def test_a_missing_base_body_is_reported(robot):
    _, model = robot
    with pytest.raises(BodyFilterError):
        RobotBodyFilter(model, 0.02, "nope", PROFILE.base_joints)
