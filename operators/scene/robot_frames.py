"""The robot's frame tree from its MuJoCo model and recorded joint positions.

Frames are named after the model: every body below the base (``chassis``,
``vertical_link``, ``left_Upper_Arm`` …) is a frame whose parent is its parent
body; every site (``lidar_front``, ``left_grip`` …) is a frame on its body;
every camera (``chest``, ``top_front`` …) is an *optical* frame on its body
(x right, y down, z along the view, the convention image viewers use), which
is MuJoCo's camera frame (x right, y up, looking along -z) turned 180° about x.

``world → odom`` is the identity in this model: the sim places the kinematic
base at the odometry pose, so odom's origin is the world origin. On the robot
that holds only as far as the odometry's start pose was the world origin.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import mujoco
import numpy as np

from teledora.operators.geometry import matrices_to_quats, quat_to_matrix, yaw_to_quat
from teledora.operators.model.robot_profile import RobotProfile

# MuJoCo camera frame -> optical frame: 180 degrees about x.
_CAM_TO_OPTICAL = np.diag([1.0, -1.0, -1.0])


@dataclass(frozen=True)
class Transform:
    """``child`` in ``parent``: translation (m) and unit quaternion (x, y, z, w)."""

    parent: str
    child: str
    translation: tuple[float, float, float]
    rotation: tuple[float, float, float, float]


def planar_transform(parent: str, child: str, x: float, y: float, yaw: float, z: float = 0.0) -> Transform:
    """A planar pose (x, y, yaw) as a transform."""
    q = yaw_to_quat(yaw)
    return Transform(parent, child, (float(x), float(y), float(z)), tuple(float(v) for v in q))  # type: ignore[arg-type]


def identity(parent: str, child: str) -> Transform:
    return Transform(parent, child, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))


class RobotFrames:
    """Transforms of every body, site and camera below the base frame.

    Args:
        model: The robot model (the profile's ``model``, or the scene that holds it).
        profile: The robot profile (joint names, lift conversion, frame names).
    """

    def __init__(self, model: mujoco.MjModel, profile: RobotProfile) -> None:
        self.model = model
        self.profile = profile
        self.data = mujoco.MjData(model)
        self.base_frame = profile.base_frame
        self._base_id = model.body(profile.base_frame).id
        self._joint_q = {model.joint(j).name: int(model.joint(j).qposadr[0]) for j in range(model.njnt)}
        self._lift_q = self._joint_q[profile.lift_joint]
        for j in profile.base_joints:  # the base sits at the origin of its parent
            self.data.qpos[self._joint_q[j]] = 0.0
        self.bodies = self._bodies_below_base()
        self.sites = [model.site(s).name for s in range(model.nsite) if model.site_bodyid[s] in self._body_set]
        self.cameras = [model.cam(c).name for c in range(model.ncam) if model.cam_bodyid[c] in self._body_set]
        # each frame's (parent, child) names and ids, in the order transforms() lists them
        body_parents = [int(model.body_parentid[b]) for b in self.bodies]
        site_ids = [model.site(n).id for n in self.sites]
        cam_ids = [model.cam(n).id for n in self.cameras]
        self._site_ids, self._cam_ids = np.array(site_ids, dtype=int), np.array(cam_ids, dtype=int)
        self._bodies = np.array(self.bodies, dtype=int)
        self._parents = np.array(body_parents + [int(model.site_bodyid[s]) for s in site_ids]
                                 + [int(model.cam_bodyid[c]) for c in cam_ids], dtype=int)
        self._names = [(model.body(p).name, model.body(b).name) for p, b in zip(body_parents, self.bodies)]
        self._names += [(model.body(int(model.site_bodyid[s])).name, n) for s, n in zip(site_ids, self.sites)]
        self._names += [(model.body(int(model.cam_bodyid[c])).name, n) for c, n in zip(cam_ids, self.cameras)]
        self.set_lift_height(0.0)

    def _bodies_below_base(self) -> list[int]:
        below = [self._base_id]
        for b in range(self.model.nbody):  # parents come before children in MuJoCo's order
            if b != self._base_id and int(self.model.body_parentid[b]) in below and b != 0:
                below.append(b)
        self._body_set = set(below)
        return below[1:]

    @property
    def frames(self) -> list[str]:
        """Every frame these transforms reach (below the base, base excluded)."""
        return [self.model.body(b).name for b in self.bodies] + self.sites + self.cameras

    def set_joints(self, positions: Mapping[str, float]) -> None:
        """Joint positions (rad) by name; unknown names are ignored, joints not
        named keep their last value (the model's reference pose at first)."""
        for name, q in positions.items():
            adr = self._joint_q.get(name)
            if adr is not None and name not in self.profile.base_joints and np.isfinite(q):
                self.data.qpos[adr] = float(q)

    def set_lift_height(self, height_m: float) -> None:
        """Lift height in the driver convention (0 = floor-homed)."""
        self.data.qpos[self._lift_q] = self.profile.lift_height_to_joint(float(height_m))

    def transforms(self) -> list[Transform]:
        """Every body in its parent body, every site and camera in its body."""
        m, d = self.model, self.data
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)  # camera modes that track a subtree need its centre of mass
        mujoco.mj_camlight(m, d)
        # every frame at once: its parent's pose, its own, then child in parent
        xmat = d.xmat.reshape(-1, 3, 3)
        p_parent, r_parent = d.xpos[self._parents], xmat[self._parents]
        p_child = np.concatenate([d.xpos[self._bodies], d.site_xpos[self._site_ids], d.cam_xpos[self._cam_ids]])
        r_child = np.concatenate([xmat[self._bodies], d.site_xmat[self._site_ids].reshape(-1, 3, 3),
                                  d.cam_xmat[self._cam_ids].reshape(-1, 3, 3) @ _CAM_TO_OPTICAL])
        t = np.einsum("nji,nj->ni", r_parent, p_child - p_parent)
        q = matrices_to_quats(np.einsum("nji,njk->nik", r_parent, r_child))
        return [Transform(parent, child, tuple(tt), tuple(qq))
                for (parent, child), tt, qq in zip(self._names, t.tolist(), q.tolist())]


def compose(chain: list[Transform]) -> tuple[np.ndarray, np.ndarray]:
    """Position and rotation matrix of the last child in the first parent."""
    p, r = np.zeros(3), np.eye(3)
    for tf in chain:
        p = p + r @ np.asarray(tf.translation)
        r = r @ quat_to_matrix(tf.rotation)
    return p, r


def resolve(transforms: list[Transform], root: str, frame: str) -> list[Transform]:
    """The chain of transforms from ``root`` down to ``frame``.

    Raises:
        KeyError: ``frame`` does not hang below ``root``.
    """
    by_child = {tf.child: tf for tf in transforms}
    chain: list[Transform] = []
    f = frame
    seen = set()
    while f != root:
        if f not in by_child or f in seen:
            raise KeyError(f"frame {frame!r} does not resolve to {root!r} (stuck at {f!r})")
        seen.add(f)
        tf = by_child[f]
        chain.append(tf)
        f = tf.parent
    return chain[::-1]


__all__ = ["RobotFrames", "Transform", "compose", "identity", "planar_transform", "resolve"]
