"""Motion-capture frame → project world frame (z up) and rigid body → base_link.

Motive streams poses in its own world frame, Y up by default, with a rigid
body's local axes equal to Motive's world axes at the moment the body was
created. teledora's world frame is z up and ``base_link`` is FLU.

The transform is written as three steps, each configurable:

1. **Axis map** ``A``: which Motive axis (with sign) becomes world x, y, z.
   The default ``("x", "-z", "y")`` maps Motive Y-up (x right, y up, z towards
   the viewer in Motive's default view) to z up: world x = Motive x, world y =
   −Motive z, world z = Motive y. This is a +90° rotation about x. The map
   must be a proper rotation (no mirroring).
2. **World placement**: a yaw about world z (``world_yaw_offset_rad``) then a
   translation (``world_offset_m``), placing the mocap origin in the world.
3. **Rigid body → base_link**: the rigid body's axes are mapped with the same
   ``A`` (so a body created while the robot faced Motive +x has base-aligned
   axes), then ``base_yaw_in_body_rad`` turns them onto the robot's heading
   and ``base_offset_in_body_m`` moves the origin from the marker pivot to the
   base_link origin (on the floor under the base centre), expressed in the
   mapped body frame.

So ``R_world_base = Rz(world_yaw) · A · R_motive_body · Aᵀ · Rz(base_yaw)`` and
``p_world_base = Rz(world_yaw) · A · p_motive + t_world + R_world_body' · offset``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import ConfigError
from teledora.operators.geometry import matrix_to_quat, quat_to_matrix
from teledora.operators.config import config_from_mapping

_AXES = {"x": 0, "y": 1, "z": 2}


class MocapFrameError(ConfigError):
    """A mocap frame configuration is invalid (bad axis map, wrong vector sizes)."""


def axis_map_matrix(axis_map: Sequence[str]) -> np.ndarray:
    """Rotation matrix ``A`` with ``world = A · motive`` from an axis map.

    Args:
        axis_map: Three entries like ``"x"``, ``"-z"``: the signed Motive axis
            that becomes world x, y and z respectively.

    Raises:
        MocapFrameError: not three entries, an unknown or repeated axis, or a
            map that mirrors (determinant −1).
    """
    if len(axis_map) != 3:
        raise MocapFrameError(f"axis_map needs 3 entries (world x, y, z), got {list(axis_map)}")
    a = np.zeros((3, 3))
    used = set()
    for row, entry in enumerate(axis_map):
        text = str(entry).strip().lower()
        sign = -1.0 if text.startswith("-") else 1.0
        name = text.lstrip("+-")
        if name not in _AXES:
            raise MocapFrameError(f"axis_map entry {entry!r} is not one of x, y, z with optional sign")
        if name in used:
            raise MocapFrameError(f"axis_map uses Motive axis {name!r} twice: {list(axis_map)}")
        used.add(name)
        a[row, _AXES[name]] = sign
    if np.linalg.det(a) < 0:
        raise MocapFrameError(f"axis_map {list(axis_map)} mirrors the frame (determinant -1); flip one sign")
    return a


def rot_z(yaw: float) -> np.ndarray:
    """Rotation matrix about z by ``yaw`` (rad)."""
    c, s = np.cos(yaw), np.sin(yaw)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def yaw_from_matrix(r: npt.ArrayLike) -> float:
    """Heading (rad) of a rotation: the angle of its x axis projected on the xy plane."""
    m = np.asarray(r, dtype=float)
    return float(np.arctan2(m[1, 0], m[0, 0]))


def _vector(name: str, value: Any) -> np.ndarray:
    v = np.asarray(value, dtype=float)
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise MocapFrameError(f"{name} must be 3 finite numbers, got {value!r}")
    return v


@dataclass(frozen=True)
class MocapFrameConfig:
    """How Motive's frame and the rigid body relate to world and base_link
    (the ``frame`` section of mocap.yaml; the world frame's name is the profile's)."""

    axis_map: tuple[str, str, str]
    world_offset_m: tuple[float, float, float]
    world_yaw_offset_rad: float
    base_offset_in_body_m: tuple[float, float, float]
    base_yaw_in_body_rad: float

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "MocapFrameConfig":
        """Builds the config from the ``frame`` section, checked."""
        return config_from_mapping(cls, data, "frame", MocapFrameError)


class MocapFrameTransform:
    """Maps a Motive rigid-body pose to the base_link pose in the world frame.

    Args:
        config: The frame relation; validated here.
    """

    def __init__(self, config: MocapFrameConfig) -> None:
        self.config = config
        self._a = axis_map_matrix(self.config.axis_map)
        self._r_world_motive = rot_z(self.config.world_yaw_offset_rad) @ self._a
        self._t_world = _vector("world_offset_m", self.config.world_offset_m)
        self._offset = _vector("base_offset_in_body_m", self.config.base_offset_in_body_m)
        self._r_body_base = rot_z(self.config.base_yaw_in_body_rad)

    def position_to_world(self, position: npt.ArrayLike) -> np.ndarray:
        """A point in Motive coordinates expressed in the world frame."""
        return self._r_world_motive @ np.asarray(position, dtype=float) + self._t_world

    def base_pose(self, position: npt.ArrayLike, orientation_xyzw: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """World position and (x, y, z, w) orientation of base_link.

        Args:
            position: Rigid-body pivot in Motive coordinates (m).
            orientation_xyzw: Rigid-body orientation in Motive coordinates.

        Raises:
            ValueError: a zero or non-finite quaternion.
        """
        r_motive_body = quat_to_matrix(orientation_xyzw)
        r_world_body = self._r_world_motive @ r_motive_body @ self._a.T
        p = self.position_to_world(position) + r_world_body @ self._offset
        r_world_base = r_world_body @ self._r_body_base
        return p, matrix_to_quat(r_world_base)

    def base_pose_planar(self, position: npt.ArrayLike, orientation_xyzw: npt.ArrayLike) -> tuple[float, float, float]:
        """(x, y, yaw) of base_link in the world frame."""
        p, q = self.base_pose(position, orientation_xyzw)
        return float(p[0]), float(p[1]), yaw_from_matrix(quat_to_matrix(q))

    def motive_pose_of_base(
        self, position: npt.ArrayLike, orientation_xyzw: npt.ArrayLike
    ) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of :meth:`base_pose`: the Motive rigid-body pose that yields this base pose.

        Used by the fake Motive and the simulator to stream what a real rig would see.
        """
        r_world_base = quat_to_matrix(orientation_xyzw)
        r_world_body = r_world_base @ self._r_body_base.T
        p_body_world = np.asarray(position, dtype=float) - r_world_body @ self._offset
        p_motive = self._r_world_motive.T @ (p_body_world - self._t_world)
        r_motive_body = self._r_world_motive.T @ r_world_body @ self._a
        return p_motive, matrix_to_quat(r_motive_body)
