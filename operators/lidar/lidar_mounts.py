"""Lidar mount poses read from the robot model's sites.

The MJCF sites ``lidar_front`` / ``lidar_back`` are the single source of truth
for where the lidars sit: the sim casts its rays from them and the merger
moves returns into the base frame with them. The pose is taken with the base
joints at zero, so the base body coincides with the world frame.
"""

from __future__ import annotations

import mujoco
import numpy as np

from teledora.operators.errors import TeledoraError
from teledora.operators.lidar.scan_merger import LidarMount


class MountNotFoundError(TeledoraError, KeyError):
    """The model has no site of the requested name."""


def site_pose_in_base(model: mujoco.MjModel, site: str, base_body: str) -> tuple[np.ndarray, np.ndarray]:
    """Position (3,) and rotation matrix (3, 3) of ``site`` in ``base_body``, at qpos0."""
    site_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_SITE, site)
    if site_id < 0:
        raise MountNotFoundError(f"model has no site {site!r}")
    body_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, base_body)
    if body_id < 0:
        raise MountNotFoundError(f"model has no body {base_body!r}")
    data = mujoco.MjData(model)
    mujoco.mj_kinematics(model, data)
    r_body = data.xmat[body_id].reshape(3, 3)
    r_site = data.site_xmat[site_id].reshape(3, 3)
    pos = r_body.T @ (data.site_xpos[site_id] - data.xpos[body_id])
    return pos, r_body.T @ r_site


def mount_from_site(model: mujoco.MjModel, site: str, base_body: str) -> LidarMount:
    """The planar mount (x, y, z, yaw) of a lidar site in ``base_body`` (the base frame).

    The lidar must be level (its z axis along the base z axis within ~1 degree);
    a tilted lidar would not scan a horizontal plane.
    """
    pos, rot = site_pose_in_base(model, site, base_body)
    if rot[2, 2] < np.cos(np.radians(1.0)):
        raise ValueError(f"site {site!r} is not level (z axis {rot[:, 2].round(4).tolist()})")
    yaw = float(np.arctan2(rot[1, 0], rot[0, 0]))
    return LidarMount(float(pos[0]), float(pos[1]), float(pos[2]), yaw)
