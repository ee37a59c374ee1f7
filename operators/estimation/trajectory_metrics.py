"""Error metrics between an associated (and aligned) estimate and ground truth.

All functions take two trajectories of equal length where sample i of the
estimate and sample i of the truth describe the same instant (see
:mod:`trajectory_association`). ``dims`` selects planar (2: x, y) or spatial
(3: x, y, z) position errors; odometry of a ground robot is judged planar.

* APE: absolute position error per sample, ``|p_est − p_truth|``.
* Yaw error: ``wrap(yaw_est − yaw_truth)`` per sample.
* RPE per metre: over every pair (i, j) where the truth travelled at least
  ``delta_m`` from i to j, the error of the estimate's motion expressed in its
  own frame at i, divided by the distance the truth travelled. A pure scale
  error s gives exactly |s − 1|; a constant offset or a global rotation gives 0.
* Drift: final position error as a percentage of the truth's path length.

Distances travelled by the truth follow
:mod:`~teledora.operators.estimation.trajectory_distance` (samples decimated
to ``min_step_m``), so the noise of a motion-capture truth does not count as
travel; ``min_step_m = 0`` sums every raw step.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from teledora.operators.errors import TeledoraError
from teledora.operators.estimation.trajectory_association import Trajectory
from teledora.operators.estimation.trajectory_distance import DEFAULT_MIN_STEP_M, cumulative_distance
from teledora.operators.geometry import wrap_angle


class MetricError(TeledoraError, ValueError):
    """A metric cannot be computed from the given trajectories."""


@dataclass(frozen=True)
class ErrorStats:
    """Summary statistics of a set of non-negative errors."""

    rmse: float
    mean: float
    median: float
    max: float
    std: float
    count: int

    @classmethod
    def of(cls, errors: np.ndarray) -> "ErrorStats":
        e = np.abs(np.asarray(errors, dtype=float))
        if e.size == 0:
            nan = float("nan")
            return cls(nan, nan, nan, nan, nan, 0)
        return cls(
            rmse=float(np.sqrt(np.mean(e * e))),
            mean=float(np.mean(e)),
            median=float(np.median(e)),
            max=float(np.max(e)),
            std=float(np.std(e)),
            count=int(e.size),
        )

    def as_dict(self) -> dict:
        return asdict(self)


def _check_pair(estimate: Trajectory, truth: Trajectory, dims: int) -> None:
    if dims not in (2, 3):
        raise MetricError(f"dims must be 2 (planar) or 3, got {dims}")
    if len(estimate) != len(truth):
        raise MetricError(f"trajectories must be associated (equal length), got {len(estimate)} and {len(truth)}")


def position_errors(estimate: Trajectory, truth: Trajectory, dims: int = 2) -> np.ndarray:
    """Per-sample absolute position error (m)."""
    _check_pair(estimate, truth, dims)
    return np.linalg.norm(estimate.positions[:, :dims] - truth.positions[:, :dims], axis=1)


def yaw_errors(estimate: Trajectory, truth: Trajectory) -> np.ndarray:
    """Per-sample signed heading error ``wrap(yaw_est − yaw_truth)`` (rad)."""
    _check_pair(estimate, truth, 2)
    return wrap_angle(estimate.yaw - truth.yaw)


def path_length(trajectory: Trajectory, dims: int = 2, min_step_m: float = DEFAULT_MIN_STEP_M) -> np.ndarray:
    """Cumulative distance travelled at each sample (m), starting at 0 (noise not counted)."""
    return cumulative_distance(trajectory, dims, min_step_m)


def _rotations(trajectory: Trajectory, dims: int) -> np.ndarray:
    if dims == 2:
        c, s = np.cos(trajectory.yaw), np.sin(trajectory.yaw)
        return np.stack([np.stack([c, -s], axis=1), np.stack([s, c], axis=1)], axis=1)
    x, y, z, w = trajectory.orientations.T
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], axis=1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], axis=1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], axis=1),
        ],
        axis=1,
    )


@dataclass(frozen=True)
class RelativeErrors:
    """RPE over distance windows: translation (m/m) and heading (rad/m) per pair."""

    delta_m: float
    translation_per_m: np.ndarray
    yaw_per_m: np.ndarray
    start_index: np.ndarray


def relative_errors(estimate: Trajectory, truth: Trajectory, delta_m: float = 1.0, dims: int = 2,
                    min_step_m: float = DEFAULT_MIN_STEP_M, truth_distance: np.ndarray | None = None) -> RelativeErrors:
    """Relative pose errors per metre over windows of ``delta_m`` truth travel.

    ``truth_distance`` (the truth's :func:`path_length`, when the caller has it)
    saves computing it again.

    Raises:
        MetricError: non-positive ``delta_m`` or unpaired trajectories.
    """
    _check_pair(estimate, truth, dims)
    if not delta_m > 0:
        raise MetricError(f"delta_m must be positive, got {delta_m}")
    dist = path_length(truth, dims, min_step_m) if truth_distance is None else truth_distance
    if len(dist) != len(truth):
        raise MetricError(f"truth_distance has {len(dist)} values for {len(truth)} samples")
    if len(dist) == 0:
        return RelativeErrors(delta_m, np.zeros(0), np.zeros(0), np.zeros(0, dtype=int))
    j = np.searchsorted(dist, dist + delta_m - 1e-12, side="left")
    i = np.nonzero(j < len(dist))[0]
    j = j[i]
    travelled = dist[j] - dist[i]
    r_e, r_t = _rotations(estimate, dims), _rotations(truth, dims)
    p_e, p_t = estimate.positions[:, :dims], truth.positions[:, :dims]
    d_e = np.einsum("nji,nj->ni", r_e[i], p_e[j] - p_e[i])
    d_t = np.einsum("nji,nj->ni", r_t[i], p_t[j] - p_t[i])
    trans = np.linalg.norm(d_e - d_t, axis=1) / travelled
    dyaw_e = wrap_angle(estimate.yaw[j] - estimate.yaw[i])
    dyaw_t = wrap_angle(truth.yaw[j] - truth.yaw[i])
    yaw = np.abs(wrap_angle(dyaw_e - dyaw_t)) / travelled
    return RelativeErrors(delta_m, trans, yaw, i)


@dataclass(frozen=True)
class Drift:
    """End-point error relative to the distance travelled."""

    final_error_m: float
    path_length_m: float
    percent_of_distance: float
    final_yaw_error_rad: float


def drift(estimate: Trajectory, truth: Trajectory, dims: int = 2, min_step_m: float = DEFAULT_MIN_STEP_M,
          truth_distance: np.ndarray | None = None) -> Drift:
    """Final position error as a percentage of the truth's path length.

    The error is taken as the trajectories stand: anchor or align the estimate
    first (an estimate fitted to the whole truth spreads its drift over the
    run and understates it).

    ``percent_of_distance`` is NaN when the truth did not move.
    """
    _check_pair(estimate, truth, dims)
    if len(truth) == 0:
        raise MetricError("drift needs at least one associated sample")
    final = float(np.linalg.norm(estimate.positions[-1, :dims] - truth.positions[-1, :dims]))
    length = float((path_length(truth, dims, min_step_m) if truth_distance is None else truth_distance)[-1])
    percent = 100.0 * final / length if length > 0 else float("nan")
    final_yaw = float(wrap_angle(estimate.yaw[-1] - truth.yaw[-1]))
    return Drift(final, length, percent, final_yaw)
