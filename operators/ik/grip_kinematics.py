"""Grip-site poses in the base frame from name-addressed joint positions
(MuJoCo forward kinematics on a model the caller loaded)."""

from __future__ import annotations

from typing import Sequence

import mujoco
import numpy as np

from teledora.operators.contract.messages import require_joint_names
from teledora.operators.model.robot_profile import RobotProfile


class GripKinematics:
    """Forward kinematics of both grip sites, relative to ``base_link``.

    Args:
        model: A model holding the profile's arm joints, lift joint and grip sites.
        profile: The robot profile.
    """

    def __init__(self, model: mujoco.MjModel, profile: RobotProfile) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.profile = profile
        self._joints = profile.arm_joint_names
        self._qadr = {j: model.joint(j).qposadr[0] for j in self._joints}
        self._lift = model.joint(profile.lift_joint).qposadr[0]
        self._base = model.body(profile.base_frame).id
        self._sites = {side: model.site(arm.grip_site).id for side, arm in profile.arms.items()}

    def grips(self, names: Sequence[str], positions: Sequence[float], lift_height_m: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{side: (position [3], rotation 3x3)} of each grip site in base_link.

        Raises:
            MessageError: names other than the profile's arm joints, or some missing.
        """
        require_joint_names(names, self._joints)
        for n, v in zip(names, positions):
            self.data.qpos[self._qadr[n]] = v
        self.data.qpos[self._lift] = self.profile.lift_height_to_joint(lift_height_m)
        mujoco.mj_kinematics(self.model, self.data)
        r_wb = self.data.xmat[self._base].reshape(3, 3)
        p_wb = self.data.xpos[self._base]
        out = {}
        for side, sid in self._sites.items():
            out[side] = (r_wb.T @ (self.data.site_xpos[sid] - p_wb), r_wb.T @ self.data.site_xmat[sid].reshape(3, 3))
        return out
