"""Quaternion maths. Quaternions are (x, y, z, w) everywhere in teledora, as in
the messages; MuJoCo (and mink) use (w, x, y, z): convert between the two only
with :func:`xyzw_to_wxyz` and :func:`wxyz_to_xyzw`.

A unit quaternion and its negation are the same rotation; :func:`quat_normalize`
returns the one with w >= 0, so normalised quaternions compare equal.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from teledora.operators.geometry.pose_error import PoseError

# Below this norm a quaternion carries no usable direction.
_MIN_NORM = 1e-6
# Below this |vector part| the rotation vector takes its small-angle limit.
_SMALL_ANGLE = 1e-12


def xyzw_to_wxyz(q: npt.ArrayLike) -> np.ndarray:
    """Message order (x, y, z, w) to MuJoCo order (w, x, y, z)."""
    x, y, z, w = np.asarray(q, dtype=float)
    return np.array([w, x, y, z])


def wxyz_to_xyzw(q: npt.ArrayLike) -> np.ndarray:
    """MuJoCo order (w, x, y, z) to message order (x, y, z, w)."""
    w, x, y, z = np.asarray(q, dtype=float)
    return np.array([x, y, z, w])


def quat_normalize(q: npt.ArrayLike) -> np.ndarray:
    """Returns ``q`` scaled to unit length, with w >= 0.

    Raises:
        PoseError: not four finite values, or a norm too small to normalise.
    """
    # on four Python floats: a handful of numpy calls on a 4-vector cost several
    # times the arithmetic, and teleop and ik normalise several per message
    arr = np.array(q, dtype=np.float64).reshape(-1)
    values = arr.tolist()
    if len(values) != 4 or not all(map(math.isfinite, values)):
        raise PoseError(f"quaternion must be 4 finite values (x, y, z, w), got {values}")
    x, y, z, w = values
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    if norm < _MIN_NORM:
        raise PoseError(f"quaternion has (near) zero norm {norm:.3g}, cannot normalise")
    if w / norm < 0:
        norm = -norm
    return np.array([x / norm, y / norm, z / norm, w / norm])


def quat_multiply(a: npt.ArrayLike, b: npt.ArrayLike) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` (apply b, then a)."""
    ax, ay, az, aw = np.asarray(a, dtype=float)
    bx, by, bz, bw = np.asarray(b, dtype=float)
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def quat_conjugate(q: npt.ArrayLike) -> np.ndarray:
    """Conjugate of ``q``: the inverse rotation of a unit quaternion."""
    x, y, z, w = np.asarray(q, dtype=float)
    return np.array([-x, -y, -z, w])


def quat_to_matrix(q: npt.ArrayLike) -> np.ndarray:
    """3x3 rotation matrix of a quaternion (normalised first)."""
    x, y, z, w = quat_normalize(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat(r: npt.ArrayLike) -> np.ndarray:
    """Unit quaternion of a rotation matrix, with w >= 0."""
    # one matrix in scalar arithmetic: the control loops call this per message, and
    # matrices_to_quats (the same result, bit for bit: tests hold them equal) costs
    # about thirty times more on a single matrix
    m = np.asarray(r, dtype=float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s, (m[2, 1] - m[1, 2]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s, (m[0, 2] - m[2, 0]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s, (m[1, 0] - m[0, 1]) / s]
    return quat_normalize(q)


def matrices_to_quats(r: npt.ArrayLike) -> np.ndarray:
    """:func:`matrix_to_quat` of a stack of rotation matrices, shape (n, 3, 3)
    to (n, 4): the same branch per matrix, in whole-array operations (a robot's
    frame tree has dozens of frames per joint state)."""
    m = np.asarray(r, dtype=float).reshape(-1, 3, 3)
    if not np.all(np.isfinite(m)):
        raise PoseError("rotation matrices must be finite")
    m00, m11, m22 = m[:, 0, 0], m[:, 1, 1], m[:, 2, 2]
    tr = m00 + m11 + m22
    branch = np.where(tr > 0, 0, np.where((m00 > m11) & (m00 > m22), 1, np.where(m11 > m22, 2, 3)))
    diag = np.stack([tr + 1.0, 1.0 + m00 - m11 - m22, 1.0 + m11 - m00 - m22, 1.0 + m22 - m00 - m11], axis=1)
    s = 2.0 * np.sqrt(np.maximum(np.take_along_axis(diag, branch[:, None], axis=1)[:, 0], 0.0))
    s = np.where(s > 0, s, 1.0)  # a zero here means a matrix that is not a rotation; normalising refuses it below
    # each is four times a product of two quaternion components
    wx, wy, wz = m[:, 2, 1] - m[:, 1, 2], m[:, 0, 2] - m[:, 2, 0], m[:, 1, 0] - m[:, 0, 1]
    xy, xz, yz = m[:, 0, 1] + m[:, 1, 0], m[:, 0, 2] + m[:, 2, 0], m[:, 1, 2] + m[:, 2, 1]
    quarter = 0.25 * s
    candidates = np.stack([
        np.stack([wx / s, wy / s, wz / s, quarter], axis=1),
        np.stack([quarter, xy / s, xz / s, wx / s], axis=1),
        np.stack([xy / s, quarter, yz / s, wy / s], axis=1),
        np.stack([xz / s, yz / s, quarter, wz / s], axis=1),
    ], axis=1)
    q = candidates[np.arange(len(m)), branch]
    norm = np.sqrt(np.sum(q * q, axis=1))
    if np.any(norm < _MIN_NORM):
        raise PoseError("a matrix is not a rotation (quaternion of near zero norm)")
    return q / np.where(q[:, 3] < 0, -norm, norm)[:, None]


def yaw_to_quat(yaw_rad: float) -> np.ndarray:
    """Unit quaternion of a rotation by ``yaw_rad`` about +z."""
    return np.array([0.0, 0.0, np.sin(yaw_rad / 2.0), np.cos(yaw_rad / 2.0)])


def quat_to_rotvec(q: npt.ArrayLike) -> np.ndarray:
    """Rotation vector (axis * angle, rad) of a quaternion, angle in [0, pi]."""
    qn = quat_normalize(q)
    v, w = qn[:3], qn[3]
    s = float(np.linalg.norm(v))
    if s < _SMALL_ANGLE:
        return 2.0 * v  # small-angle limit
    angle = 2.0 * np.arctan2(s, w)
    return v / s * angle


def quat_from_rotvec(r: npt.ArrayLike) -> np.ndarray:
    """Unit quaternion of a rotation vector (axis * angle, rad)."""
    rv = np.asarray(r, dtype=np.float64)
    angle = float(np.linalg.norm(rv))
    if angle < _SMALL_ANGLE:
        return quat_normalize([0.5 * rv[0], 0.5 * rv[1], 0.5 * rv[2], 1.0])
    axis = rv / angle
    return np.concatenate([axis * np.sin(angle / 2.0), [np.cos(angle / 2.0)]])


def quat_power(q: npt.ArrayLike, t: float) -> np.ndarray:
    """The rotation ``q`` scaled by ``t`` along its shortest arc (t=0.1 is a tenth of it)."""
    return quat_from_rotvec(t * quat_to_rotvec(q))


def quat_angle(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Smallest angle (rad, in [0, pi]) of the rotation taking ``a`` to ``b``.

    Computed from the relative rotation's vector part, which stays accurate for
    tiny angles (an arccos of the dot product loses ~1e-8 rad near zero).
    """
    return float(np.linalg.norm(quat_to_rotvec(quat_multiply(b, quat_conjugate(a)))))


def quat_slerp(a: npt.ArrayLike, b: npt.ArrayLike, t: float) -> np.ndarray:
    """Spherical interpolation from ``a`` (t=0) to ``b`` (t=1) along the shortest arc."""
    a, b = quat_normalize(a), quat_normalize(b)
    d = float(np.dot(a, b))
    if d < 0:
        b, d = -b, -d
    if d > 0.9995:
        return quat_normalize(a + t * (b - a))
    theta = np.arccos(min(1.0, d))
    return (np.sin((1 - t) * theta) * a + np.sin(t * theta) * b) / np.sin(theta)
