"""Rotation helpers. Messages carry quaternions as (x, y, z, w); MuJoCo uses
(w, x, y, z). Convert between the two only through these functions."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def xyzw_to_wxyz(q: npt.ArrayLike) -> np.ndarray:
    """Message order (x, y, z, w) to MuJoCo order (w, x, y, z)."""
    x, y, z, w = np.asarray(q, dtype=float)
    return np.array([w, x, y, z])


def wxyz_to_xyzw(q: npt.ArrayLike) -> np.ndarray:
    """MuJoCo order (w, x, y, z) to message order (x, y, z, w)."""
    w, x, y, z = np.asarray(q, dtype=float)
    return np.array([x, y, z, w])


def quat_multiply_xyzw(a: npt.ArrayLike, b: npt.ArrayLike) -> np.ndarray:
    """Hamilton product a ⊗ b, both (x, y, z, w)."""
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


def quat_conjugate_xyzw(q: npt.ArrayLike) -> np.ndarray:
    x, y, z, w = np.asarray(q, dtype=float)
    return np.array([-x, -y, -z, w])


def quat_normalize(q: npt.ArrayLike) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    n = np.linalg.norm(q)
    if not np.isfinite(n) or n < 1e-12:
        raise ValueError("cannot normalise a zero or non-finite quaternion")
    return q / n


def quat_to_matrix_xyzw(q: npt.ArrayLike) -> np.ndarray:
    """3x3 rotation matrix of a unit (x, y, z, w) quaternion."""
    x, y, z, w = quat_normalize(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def matrix_to_quat_xyzw(r: npt.ArrayLike) -> np.ndarray:
    """Unit (x, y, z, w) quaternion of a rotation matrix, with w >= 0."""
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
    q = quat_normalize(q)
    return q if q[3] >= 0 else -q


def yaw_to_quat_xyzw(yaw: float) -> np.ndarray:
    return np.array([0.0, 0.0, np.sin(yaw / 2.0), np.cos(yaw / 2.0)])


def quat_angle_xyzw(a: npt.ArrayLike, b: npt.ArrayLike) -> float:
    """Smallest rotation angle (rad) between two unit quaternions."""
    d = abs(float(np.dot(quat_normalize(a), quat_normalize(b))))
    return 2.0 * float(np.arccos(min(1.0, d)))


def wrap_angle(a: float) -> float:
    """Wraps an angle to [-pi, pi)."""
    return (a + np.pi) % (2.0 * np.pi) - np.pi
