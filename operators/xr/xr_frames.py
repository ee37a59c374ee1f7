"""WebXR reference space to the robot's FLU convention, and the quaternion maths it needs.

WebXR spaces are right-handed with +x right, +y up and -z forward (the way the
wearer faced when the session started). The project's frames are FLU: +x
forward, +y left, +z up. The change of basis is a fixed proper rotation

    x_flu = -z_xr,   y_flu = -x_xr,   z_flu = y_xr

so positions are multiplied by that matrix and orientations are conjugated by
it. For a quaternion that means the vector part is rotated the same way while
the scalar part is unchanged. All quaternions here are (x, y, z, w).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError
from teledora.operators.geometry.rotations import quat_conjugate_xyzw, quat_multiply_xyzw

#: Rotation matrix taking WebXR-space vectors to FLU vectors.
WEBXR_TO_FLU = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])

_IDENTITY_XYZW = np.array([0.0, 0.0, 0.0, 1.0])


class PoseError(TeledoraError, ValueError):
    """A position or orientation has the wrong shape or is not finite/normalisable."""


@dataclass(frozen=True)
class Pose:
    """A rigid pose: position (m) and unit quaternion (x, y, z, w)."""

    position: np.ndarray
    orientation: np.ndarray

    @staticmethod
    def of(position: npt.ArrayLike, orientation: npt.ArrayLike) -> "Pose":
        """Builds a validated pose; the quaternion is normalised.

        Raises:
            PoseError: position is not 3 finite values or the quaternion is not 4
                finite values with a usable norm.
        """
        p = np.array(position, dtype=np.float64).reshape(-1)
        if p.shape != (3,) or not np.all(np.isfinite(p)):
            raise PoseError(f"position must be 3 finite values, got {p.tolist()}")
        return Pose(p, quat_normalize(orientation))

    @staticmethod
    def identity() -> "Pose":
        return Pose(np.zeros(3), _IDENTITY_XYZW.copy())


def quat_normalize(q: npt.ArrayLike) -> np.ndarray:
    """Returns ``q`` scaled to unit length with w >= 0.

    Raises:
        PoseError: not four finite values, or norm too small to normalise.
    """
    arr = np.array(q, dtype=np.float64).reshape(-1)
    if arr.shape != (4,) or not np.all(np.isfinite(arr)):
        raise PoseError(f"quaternion must be 4 finite values (x, y, z, w), got {arr.tolist()}")
    norm = float(np.linalg.norm(arr))
    if norm < 1e-6:
        raise PoseError("quaternion has (near) zero norm")
    arr = arr / norm
    return -arr if arr[3] < 0 else arr


def quat_multiply(a: npt.ArrayLike, b: npt.ArrayLike) -> np.ndarray:
    """Hamilton product ``a * b`` of (x, y, z, w) quaternions (apply b, then a)."""
    return quat_multiply_xyzw(a, b)


def quat_conjugate(q: npt.ArrayLike) -> np.ndarray:
    """Inverse of a unit quaternion."""
    return quat_conjugate_xyzw(q)


def quat_to_rotvec(q: npt.ArrayLike) -> np.ndarray:
    """Rotation vector (axis * angle, rad) of a unit quaternion, angle in [0, pi]."""
    qn = quat_normalize(q)
    v, w = qn[:3], qn[3]
    s = float(np.linalg.norm(v))
    if s < 1e-12:
        return 2.0 * v  # small-angle limit
    angle = 2.0 * np.arctan2(s, w)
    return v / s * angle


def quat_from_rotvec(r: npt.ArrayLike) -> np.ndarray:
    """Unit quaternion of a rotation vector (axis * angle, rad)."""
    rv = np.asarray(r, dtype=np.float64)
    angle = float(np.linalg.norm(rv))
    if angle < 1e-12:
        return quat_normalize([0.5 * rv[0], 0.5 * rv[1], 0.5 * rv[2], 1.0])
    axis = rv / angle
    return np.concatenate([axis * np.sin(angle / 2.0), [np.cos(angle / 2.0)]])


def quat_power(q: npt.ArrayLike, t: float) -> np.ndarray:
    """The rotation ``q`` scaled by ``t`` along its shortest arc (t=0.1 is a tenth of it)."""
    return quat_from_rotvec(t * quat_to_rotvec(q))


def quat_angle(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Angle (rad) of the rotation taking ``a`` to ``b``."""
    return float(np.linalg.norm(quat_to_rotvec(quat_multiply(b, quat_conjugate(a)))))


def webxr_position_to_flu(position: npt.ArrayLike) -> np.ndarray:
    """A WebXR-space point (+x right, +y up, -z forward) in FLU coordinates."""
    p = np.asarray(position, dtype=np.float64).reshape(3)
    return WEBXR_TO_FLU @ p


def webxr_quaternion_to_flu(q: npt.ArrayLike) -> np.ndarray:
    """A WebXR-space orientation (x, y, z, w) re-expressed in the FLU basis."""
    qn = quat_normalize(q)
    v = WEBXR_TO_FLU @ qn[:3]
    return quat_normalize([v[0], v[1], v[2], qn[3]])


def webxr_pose_to_flu(position: npt.ArrayLike, orientation: npt.ArrayLike) -> Pose:
    """A WebXR pose (e.g. a target-ray pose in ``local-floor``) as an FLU pose.

    Raises:
        PoseError: malformed input.
    """
    pose = Pose.of(position, orientation)
    return Pose(webxr_position_to_flu(pose.position), webxr_quaternion_to_flu(pose.orientation))

