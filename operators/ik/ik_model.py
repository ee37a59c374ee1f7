"""The MuJoCo model the IK solves on: the robot model named in ik.yaml, with a
floor plane added as a collision proxy when the settings ask for one.
"""

from __future__ import annotations

from pathlib import Path

import mujoco


def build_ik_model(model_path: Path, add_floor: bool) -> mujoco.MjModel:
    """The robot model for IK, with a ``floor`` plane proxy at z = 0 when asked."""
    spec = mujoco.MjSpec.from_file(str(model_path))
    if add_floor:
        floor = spec.worldbody.add_geom()
        floor.name = "floor"
        floor.type = mujoco.mjtGeom.mjGEOM_PLANE
        floor.size = [0.0, 0.0, 0.05]
        floor.contype = 1
        floor.conaffinity = 1
        floor.group = 3
    return spec.compile()
