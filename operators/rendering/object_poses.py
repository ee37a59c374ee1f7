"""Free bodies of a render model posed from an ObjectPoses message.

The sim's physics moves the objects on the stand; the cameras render their own
copy of the scene, so each frame puts the objects where the sim's ``objects``
topic last said they were. Poses are in the world frame, as a free joint's
qpos is (position, then the quaternion in MuJoCo's w, x, y, z order).
"""

from __future__ import annotations

from typing import Any, Mapping

import mujoco
import numpy as np


def free_body_qpos_addresses(model: Any) -> dict[str, int]:
    """Body name -> qpos address of its free joint, for every body that has one."""
    out: dict[str, int] = {}
    for j in range(model.njnt):
        if model.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.jnt_bodyid[j]))
            if name:
                out[name] = int(model.jnt_qposadr[j])
    return out


def write_object_poses(qpos: np.ndarray, addresses: Mapping[str, int], msg: Mapping[str, Any]) -> list[str]:
    """Writes each named object's pose into ``qpos``; returns the names the
    model has no free body for (left alone). A non-finite pose or a
    quaternion of zero length is skipped as well (returned too)."""
    unknown = []
    for i, name in enumerate(msg["names"]):
        adr = addresses.get(name)
        pos = np.array([msg["x"][i], msg["y"][i], msg["z"][i]], dtype=float)
        quat = np.array([msg["qw"][i], msg["qx"][i], msg["qy"][i], msg["qz"][i]], dtype=float)
        norm = float(np.linalg.norm(quat))
        if adr is None or not (np.all(np.isfinite(pos)) and np.isfinite(norm) and norm > 0.0):
            unknown.append(str(name))
            continue
        qpos[adr:adr + 3] = pos
        qpos[adr + 3:adr + 7] = quat / norm
    return unknown
