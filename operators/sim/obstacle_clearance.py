"""How far the robot is from the room's obstacles, for checking a drive.

The robot is posed in the scene model from a planar base pose, the lift
height and the arm joints (what GroundTruth carries), and the smallest
distance between any of its geoms and any fixed geom of the room (the world
body's geoms, the floor plane excepted) is measured with MuJoCo's
``mj_geomDistance``. Only fixed obstacles count; the floor and other moving
bodies do not. A negative distance is a penetration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import mujoco
import numpy as np

from teledora.operators.model.robot_profile import RobotProfile


@dataclass(frozen=True)
class Clearance:
    """The smallest robot-to-obstacle distance (m) and the geoms it is between."""

    distance_m: float
    robot_geom: str
    obstacle_geom: str


def _name(model: mujoco.MjModel, g: int) -> str:
    return model.geom(g).name or f"geom{g}"


class ObstacleClearance:
    """Distance from the posed robot to the room's fixed obstacles.

    Args:
        model: The scene model (robot and room).
        profile: The robot profile (base and lift joint names).
        horizon_m: Distances beyond this are reported as this (MuJoCo's
            ``distmax``); keep it above any clearance worth reporting.
    """

    def __init__(self, model: mujoco.MjModel, profile: RobotProfile, horizon_m: float = 2.0) -> None:
        self.model = model
        self.profile = profile
        self.data = mujoco.MjData(model)
        self.horizon_m = float(horizon_m)
        base = model.body(profile.base_frame).id
        below = {base}
        for b in range(1, model.nbody):
            if int(model.body_parentid[b]) in below:
                below.add(b)
        self.robot_geoms = [g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in below]
        self.obstacle_geoms = [
            g for g in range(model.ngeom) if int(model.geom_bodyid[g]) == 0 and int(model.geom_type[g]) != mujoco.mjtGeom.mjGEOM_PLANE
        ]
        self._q = {model.joint(j).name: int(model.joint(j).qposadr[0]) for j in range(model.njnt)}

    def pose(self, x: float, y: float, yaw: float, lift_height_m: float, joints: Mapping[str, float]) -> None:
        """Places the robot: base (world frame), lift (driver convention), joints (rad, by name)."""
        d = self.data
        for name, v in zip(self.profile.base_joints, (x, y, yaw)):
            d.qpos[self._q[name]] = float(v)
        d.qpos[self._q[self.profile.lift_joint]] = self.profile.lift_height_to_joint(float(lift_height_m))
        for name, v in joints.items():
            if name in self._q:
                d.qpos[self._q[name]] = float(v)
        mujoco.mj_kinematics(self.model, d)

    def nearest(self) -> Clearance:
        """The nearest robot/obstacle pair at the current pose."""
        best = Clearance(self.horizon_m, "", "")
        fromto = np.zeros(6)
        for o in self.obstacle_geoms:
            for r in self.robot_geoms:
                dist = mujoco.mj_geomDistance(self.model, self.data, r, o, self.horizon_m, fromto)
                if dist < best.distance_m:
                    best = Clearance(float(dist), _name(self.model, r), _name(self.model, o))
        return best

    def at(self, x: float, y: float, yaw: float, lift_height_m: float, joints: Mapping[str, float]) -> Clearance:
        """:meth:`pose` then :meth:`nearest`."""
        self.pose(x, y, yaw, lift_height_m, joints)
        return self.nearest()
