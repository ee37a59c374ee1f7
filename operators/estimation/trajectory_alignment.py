"""Aligning an estimated trajectory onto ground truth before measuring errors.

An odometry estimate lives in its own ``odom`` frame, which the mocap world
frame does not share. Which alignment is applied changes what the numbers
mean, so it is always named in the evaluation output:

* ``none``: compare raw coordinates (both already in one frame).
* ``origin``: planar transform that puts the first estimate pose on the
  first truth pose (x, y, yaw): what "starting from a known pose" gives.
* ``se2``: least-squares rotation about z + xy translation (Umeyama in 2D).
* ``se3``: least-squares 3D rotation + translation.
* ``sim3``: ``se3`` plus a scale. It hides scale errors (e.g. a wrong
  optical-flow gain), so use it only to separate scale from shape.

The transform maps estimate coordinates into the truth frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError
from teledora.operators.estimation.trajectory_association import Trajectory
from teledora.operators.geometry import matrix_to_quat

ALIGNMENTS: tuple[str, ...] = ("none", "origin", "se2", "se3", "sim3")


class AlignmentError(TeledoraError, ValueError):
    """An alignment cannot be computed (unknown method, too few or degenerate points)."""


@dataclass(frozen=True)
class SimilarityTransform:
    """``x_truth = scale · rotation · x_estimate + translation``."""

    rotation: np.ndarray
    translation: np.ndarray
    scale: float = 1.0
    method: str = "none"

    @property
    def yaw(self) -> float:
        """Rotation about z (rad) of the transform."""
        return float(np.arctan2(self.rotation[1, 0], self.rotation[0, 0]))

    def apply(self, trajectory: Trajectory) -> Trajectory:
        """The trajectory expressed in the truth frame."""
        pos = self.scale * trajectory.positions @ self.rotation.T + self.translation
        quat = _left_multiply(matrix_to_quat(self.rotation), trajectory.orientations)
        return Trajectory(trajectory.stamps_ns, pos, quat)

    def as_dict(self) -> dict:
        return {
            "method": self.method,
            "rotation": self.rotation.tolist(),
            "translation_m": self.translation.tolist(),
            "scale": self.scale,
            "yaw_rad": self.yaw,
        }


def _left_multiply(q: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Hamilton products q ⊗ rows[i] for (N, 4) xyzw rows."""
    ax, ay, az, aw = q
    bx, by, bz, bw = rows.T
    return np.column_stack(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def umeyama(source: npt.ArrayLike, target: npt.ArrayLike, with_scale: bool = False) -> tuple[np.ndarray, np.ndarray, float]:
    """Least-squares (R, t, s) with ``target ≈ s·R·source + t`` (Umeyama 1991).

    Args:
        source: (N, d) points.
        target: (N, d) points.
        with_scale: Also fit a uniform scale.

    Raises:
        AlignmentError: fewer than 2 points, or points that are all the same.
    """
    src = np.asarray(source, dtype=float)
    dst = np.asarray(target, dtype=float)
    if src.shape != dst.shape or src.ndim != 2 or len(src) < 2:
        raise AlignmentError(f"need two (N, d) arrays with N >= 2, got {src.shape} and {dst.shape}")
    mu_s, mu_d = src.mean(axis=0), dst.mean(axis=0)
    xs, xd = src - mu_s, dst - mu_d
    var_s = float(np.mean(np.sum(xs * xs, axis=1)))
    if var_s < 1e-18:
        raise AlignmentError("alignment needs the estimate to move: all its points coincide")
    cov = xd.T @ xs / len(src)
    u, d, vt = np.linalg.svd(cov)
    s_fix = np.eye(src.shape[1])
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        s_fix[-1, -1] = -1.0
    r = u @ s_fix @ vt
    scale = float(np.trace(np.diag(d) @ s_fix) / var_s) if with_scale else 1.0
    t = mu_d - scale * r @ mu_s
    return r, t, scale


def _planar(r2: np.ndarray, t2: np.ndarray, method: str, scale: float = 1.0) -> SimilarityTransform:
    r = np.eye(3)
    r[:2, :2] = r2
    return SimilarityTransform(r, np.array([t2[0], t2[1], 0.0]), scale, method)


def align(estimate: Trajectory, truth: Trajectory, method: str) -> SimilarityTransform:
    """The transform of ``method`` mapping associated ``estimate`` samples onto ``truth``.

    Both trajectories must be associated (same length, sample i ↔ sample i).

    Raises:
        AlignmentError: unknown method, mismatched lengths, or degenerate motion.
    """
    if method not in ALIGNMENTS:
        raise AlignmentError(f"alignment must be one of {ALIGNMENTS}, got {method!r}")
    if len(estimate) != len(truth) or len(estimate) == 0:
        raise AlignmentError(f"alignment needs paired samples, got {len(estimate)} and {len(truth)}")
    if method == "none":
        return SimilarityTransform(np.eye(3), np.zeros(3), 1.0, method)
    if method == "origin":
        dyaw = truth.yaw[0] - estimate.yaw[0]
        c, s = np.cos(dyaw), np.sin(dyaw)
        r2 = np.array([[c, -s], [s, c]])
        t2 = truth.positions[0, :2] - r2 @ estimate.positions[0, :2]
        return _planar(r2, t2, method)
    if method == "se2":
        r2, t2, _ = umeyama(estimate.positions[:, :2], truth.positions[:, :2])
        return _planar(r2, t2, method)
    r, t, scale = umeyama(estimate.positions, truth.positions, with_scale=(method == "sim3"))
    return SimilarityTransform(r, t, scale, method)
