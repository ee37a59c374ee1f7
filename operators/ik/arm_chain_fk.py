"""Forward kinematics of one arm for many joint samples at once.

The global search ranks hundreds of uniform joint samples by how close they put
the grip to a target. MuJoCo's ``mj_kinematics`` does that one sample at a time
over the whole model (about 16 µs each with the Python around it); this walks
only the arm's chain of bodies, from the body above its first joint to the grip
site, for all samples together in numpy, with MuJoCo's own rules: a body is
placed at its ``pos``/``quat`` in its parent, and a hinge turns it by
``q - qpos0`` about its axis through the joint's anchor. Everything above the
chain (base, lift) is read from an ``MjData`` the caller has brought up to date.
"""

from __future__ import annotations

from typing import Sequence

import mujoco
import numpy as np

from teledora.operators.errors import ConfigError


class ArmChainError(ConfigError):
    """The arm's joints (from the robot profile) do not form one chain of hinges
    ending at the site in the model."""


def _quat_matrix(q_wxyz: np.ndarray) -> np.ndarray:
    out = np.zeros(9)
    mujoco.mju_quat2Mat(out, np.asarray(q_wxyz, dtype=float))
    return out.reshape(3, 3)


class ArmChainFk:
    """Grip site poses of one arm for a batch of its joint values.

    Args:
        model: The MuJoCo model.
        joints: The arm's hinge joint names, in the order of the sample columns.
        site: The site whose pose is wanted (the grip).

    Raises:
        ArmChainError: a joint that is not a hinge, or not on the site's chain.
    """

    def __init__(self, model: mujoco.MjModel, joints: Sequence[str], site: str) -> None:
        self.site_id = model.site(site).id
        column = {}
        for k, name in enumerate(joints):
            j = model.joint(name).id
            if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_HINGE:
                raise ArmChainError(f"{name} is not a hinge")
            column[j] = k
        chain = []  # (body, its arm joints) from the site's body up to the one holding the first arm joint
        found: set[int] = set()
        b = int(model.site_bodyid[self.site_id])
        while found != set(column):
            own = list(range(model.body_jntadr[b], model.body_jntadr[b] + model.body_jntnum[b]))
            if b == 0 or any(j not in column for j in own):  # the world, or a joint that is not the arm's
                missing = sorted(model.joint(j).name for j in set(column) - found)
                raise ArmChainError(f"joints not on the chain to site {site} below any other joint: {missing}")
            chain.append((b, own))
            found.update(own)
            b = int(model.body_parentid[b])
        self.parent = b  # the body above the chain: its pose comes from the caller's MjData
        self._steps = []
        for body, own in reversed(chain):
            hinges = [(column[j], model.jnt_axis[j].copy(), model.jnt_pos[j].copy(),
                       float(model.qpos0[model.jnt_qposadr[j]])) for j in own]
            self._steps.append((model.body_pos[body].copy(), _quat_matrix(model.body_quat[body]), hinges))
        self._site_pos = model.site_pos[self.site_id].copy()
        self._site_rot = _quat_matrix(model.site_quat[self.site_id])

    def poses(self, data: mujoco.MjData, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """World positions (N, 3) and rotation matrices (N, 3, 3) of the site for
        joint samples ``q`` (N, len(joints)); the rest of the robot as in ``data``
        (its kinematics must be current)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        n = q.shape[0]
        p = np.broadcast_to(data.xpos[self.parent], (n, 3)).copy()
        r = np.broadcast_to(data.xmat[self.parent].reshape(3, 3), (n, 3, 3)).copy()
        for pos, rot, hinges in self._steps:
            p = p + r @ pos
            r = r @ rot
            for col, axis, anchor, q0 in hinges:
                turn = _rotations(axis, q[:, col] - q0)
                a = p + r @ anchor  # the anchor stays where it is while the body turns
                r = r @ turn
                p = a - r @ anchor
        return p + r @ self._site_pos, r @ self._site_rot


def _rotations(axis: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """Rotation matrices (N, 3, 3) about a unit ``axis`` by ``angles`` (Rodrigues)."""
    x, y, z = axis / np.linalg.norm(axis)
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    s, c = np.sin(angles)[:, None, None], np.cos(angles)[:, None, None]
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)
