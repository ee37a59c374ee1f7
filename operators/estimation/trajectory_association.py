"""Trajectories on one clock, and pairing an estimate with ground truth by time.

A :class:`Trajectory` is a strictly increasing list of host-clock stamps with
a 3D position and an (x, y, z, w) orientation per stamp. Association pairs
every estimate sample with a truth pose at the same instant, either the
nearest truth sample within a tolerance or the truth interpolated between its
two neighbours (never across a gap longer than the tolerance, so dropouts stay
dropouts). A known or estimated *lag* shifts the comparison: an estimate
stamped ``t`` describes the truth at ``t − lag``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError

AssociationMethod = Literal["nearest", "interpolate"]
ASSOCIATION_METHODS: tuple[str, ...] = ("nearest", "interpolate")


class TrajectoryError(TeledoraError, ValueError):
    """A trajectory's arrays are inconsistent (shapes, ordering, non-finite values)."""


class AssociationError(TeledoraError, ValueError):
    """Estimate and truth cannot be associated (no overlap, bad parameters)."""


def _unit_quaternions(q: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(q, axis=1, keepdims=True)
    if np.any(norms < 1e-9):
        raise TrajectoryError("orientation contains a zero quaternion")
    return q / norms


@dataclass(frozen=True)
class Trajectory:
    """Timed poses: ``stamps_ns`` (N,), ``positions`` (N, 3) m, ``orientations`` (N, 4) xyzw."""

    stamps_ns: np.ndarray
    positions: np.ndarray
    orientations: np.ndarray

    def __post_init__(self) -> None:
        stamps = np.asarray(self.stamps_ns, dtype=np.int64)
        pos = np.asarray(self.positions, dtype=float).reshape(-1, 3)
        quat = np.asarray(self.orientations, dtype=float).reshape(-1, 4)
        if not (stamps.ndim == 1 and len(stamps) == len(pos) == len(quat)):
            raise TrajectoryError(
                f"stamps ({stamps.shape}), positions ({pos.shape}) and orientations ({quat.shape}) must have equal length"
            )
        if len(stamps) > 1 and np.any(np.diff(stamps) <= 0):
            raise TrajectoryError("stamps must be strictly increasing (sort and de-duplicate first)")
        if not (np.all(np.isfinite(pos)) and np.all(np.isfinite(quat))):
            raise TrajectoryError("positions and orientations must be finite")
        object.__setattr__(self, "stamps_ns", stamps)
        object.__setattr__(self, "positions", pos)
        object.__setattr__(self, "orientations", _unit_quaternions(quat) if len(quat) else quat)

    @classmethod
    def from_planar(cls, stamps_ns: npt.ArrayLike, x: npt.ArrayLike, y: npt.ArrayLike, yaw: npt.ArrayLike) -> "Trajectory":
        """A trajectory on the floor (z = 0) from x, y, yaw arrays."""
        yaw = np.asarray(yaw, dtype=float)
        n = len(yaw)
        pos = np.column_stack([np.asarray(x, dtype=float), np.asarray(y, dtype=float), np.zeros(n)])
        quat = np.column_stack([np.zeros(n), np.zeros(n), np.sin(yaw / 2), np.cos(yaw / 2)])
        return cls(np.asarray(stamps_ns, dtype=np.int64), pos, quat)

    def __len__(self) -> int:
        return len(self.stamps_ns)

    @property
    def times_s(self) -> np.ndarray:
        """Stamps in seconds relative to the first sample."""
        return (self.stamps_ns - self.stamps_ns[0]) / 1e9 if len(self) else np.zeros(0)

    @property
    def yaw(self) -> np.ndarray:
        """Heading (rad): the angle of each body x axis projected on the xy plane."""
        x, y, z, w = self.orientations.T
        return np.arctan2(2 * (x * y + z * w), 1 - 2 * (y * y + z * z))

    def select(self, mask: npt.ArrayLike | slice) -> "Trajectory":
        """The samples where ``mask`` is true (or at the given indices or slice)."""
        m = mask if isinstance(mask, slice) else np.asarray(mask)
        return Trajectory(self.stamps_ns[m], self.positions[m], self.orientations[m])


def slerp(q0: np.ndarray, q1: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Row-wise spherical interpolation of unit quaternions (N, 4) by fractions f (N,)."""
    dot = np.sum(q0 * q1, axis=1)
    q1 = np.where(dot[:, None] < 0, -q1, q1)
    dot = np.abs(dot).clip(max=1.0)
    theta = np.arccos(dot)
    small = theta < 1e-9
    sin_t = np.where(small, 1.0, np.sin(theta))
    a = np.where(small, 1 - f, np.sin((1 - f) * theta) / sin_t)
    b = np.where(small, f, np.sin(f * theta) / sin_t)
    out = a[:, None] * q0 + b[:, None] * q1
    return out / np.linalg.norm(out, axis=1, keepdims=True)


@dataclass(frozen=True)
class Association:
    """Estimate samples paired with truth poses at the same instants.

    ``estimate`` keeps the associated estimate samples; ``truth`` holds the
    truth poses for them (same length, stamped like the estimate). ``fraction``
    is associated / all estimate samples; ``lag_s`` the lag that was applied.
    """

    estimate: Trajectory
    truth: Trajectory
    fraction: float
    lag_s: float
    method: str
    max_diff_s: float
    estimate_count: int


def associate(
    estimate: Trajectory,
    truth: Trajectory,
    *,
    method: AssociationMethod = "interpolate",
    max_diff_s: float = 0.02,
    lag_s: float = 0.0,
) -> Association:
    """Pairs each estimate sample with truth at ``stamp − lag``.

    Args:
        estimate: Trajectory under test.
        truth: Ground truth (e.g. mocap; invalid frames already removed).
        method: ``"nearest"``: the closest truth sample, kept if within
            ``max_diff_s``; ``"interpolate"``: truth interpolated between the
            two samples around the instant, kept if both are within
            ``max_diff_s`` of it (no interpolation across dropouts).
        max_diff_s: Tolerance in seconds (> 0).
        lag_s: Estimate lag: an estimate stamped t describes truth at t − lag.

    Raises:
        AssociationError: unknown method, non-positive tolerance, or empty inputs.
    """
    if method not in ASSOCIATION_METHODS:
        raise AssociationError(f"association method must be one of {ASSOCIATION_METHODS}, got {method!r}")
    if not max_diff_s > 0:
        raise AssociationError(f"max_diff_s must be positive, got {max_diff_s}")
    if len(estimate) == 0 or len(truth) == 0:
        raise AssociationError(f"nothing to associate: {len(estimate)} estimate and {len(truth)} truth samples")
    query = estimate.stamps_ns.astype(np.float64) - lag_s * 1e9
    t_truth = truth.stamps_ns.astype(np.float64)
    tol = max_diff_s * 1e9
    right = np.searchsorted(t_truth, query, side="left").clip(0, len(t_truth) - 1)
    left = (right - 1).clip(0, len(t_truth) - 1)
    if method == "nearest":
        pick = np.where(np.abs(t_truth[left] - query) <= np.abs(t_truth[right] - query), left, right)
        keep = np.abs(t_truth[pick] - query) <= tol
        idx = pick[keep]
        pos, quat = truth.positions[idx], truth.orientations[idx]
    else:
        exact = t_truth[right] == query
        left = np.where(exact, right, left)
        inside = (t_truth[left] <= query) & (t_truth[right] >= query)
        near = (query - t_truth[left] <= tol) & (t_truth[right] - query <= tol)
        keep = inside & near
        li, ri, qk = left[keep], right[keep], query[keep]
        span = t_truth[ri] - t_truth[li]
        f = np.where(span > 0, (qk - t_truth[li]) / np.where(span > 0, span, 1.0), 0.0)
        pos = truth.positions[li] + f[:, None] * (truth.positions[ri] - truth.positions[li])
        quat = slerp(truth.orientations[li], truth.orientations[ri], f)
    est = estimate.select(keep)
    return Association(
        estimate=est,
        truth=Trajectory(est.stamps_ns, pos, quat),
        fraction=float(np.count_nonzero(keep)) / len(estimate),
        lag_s=float(lag_s),
        method=method,
        max_diff_s=float(max_diff_s),
        estimate_count=len(estimate),
    )


def estimate_lag(
    estimate: Trajectory,
    truth: Trajectory,
    cost: Callable[[Association], float],
    *,
    max_lag_s: float = 0.5,
    step_s: float = 0.01,
    tolerance_s: float = 1e-4,
    method: AssociationMethod = "interpolate",
    max_diff_s: float = 0.02,
    min_fraction: float = 0.5,
) -> tuple[float, float]:
    """Finds the lag that minimises ``cost`` over ``[−max_lag_s, max_lag_s]``.

    A grid search with ``step_s`` spacing, then golden-section refinement to
    ``tolerance_s`` around the best grid point. Lags that associate fewer than
    ``min_fraction`` of the estimate are not considered.

    Args:
        cost: Error of an association (e.g. position RMSE after alignment).

    Returns:
        (lag_s, cost at that lag).

    Raises:
        AssociationError: no candidate lag associates enough samples.
    """
    if not (max_lag_s >= 0 and step_s > 0 and tolerance_s > 0):
        raise AssociationError("max_lag_s must be >= 0 and step_s, tolerance_s > 0")

    def evaluate(lag: float) -> float:
        a = associate(estimate, truth, method=method, max_diff_s=max_diff_s, lag_s=lag)
        if a.fraction < min_fraction or len(a.estimate) < 3:
            return np.inf
        return float(cost(a))

    grid = np.arange(-max_lag_s, max_lag_s + step_s / 2, step_s)
    costs = np.array([evaluate(float(g)) for g in grid])
    if not np.any(np.isfinite(costs)):
        raise AssociationError(
            f"no lag in ±{max_lag_s} s associates at least {min_fraction:.0%} of the estimate within {max_diff_s} s"
        )
    best = int(np.argmin(costs))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    ratio = (np.sqrt(5) - 1) / 2
    c, d = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
    fc, fd = evaluate(c), evaluate(d)
    while hi - lo > tolerance_s:
        if fc <= fd:
            hi, d, fd = d, c, fc
            c = hi - ratio * (hi - lo)
            fc = evaluate(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + ratio * (hi - lo)
            fd = evaluate(d)
    candidates = [(costs[best], float(grid[best])), (fc, c), (fd, d)]
    best_cost, best_lag = min(candidates)
    return float(best_lag), float(best_cost)
