"""How closely the grips follow their targets once the targets stop moving.

Given a time series of targets and a time series of achieved grip positions
(both in base_link), a target sample counts as *settled* when the target has
moved less than ``still_tol_m`` during the preceding ``hold_s`` seconds; the
grip error is measured at those instants only, against the achieved position
nearest in time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class TrackingSummary:
    samples: int
    median_m: float
    p95_m: float
    max_m: float


def settled_mask(stamps_ns: npt.ArrayLike, targets: npt.ArrayLike, hold_s: float = 1.0, still_tol_m: float = 1e-4) -> np.ndarray:
    """True where the target has stayed within ``still_tol_m`` of its current
    value over the last ``hold_s`` seconds (and that much history exists)."""
    t = np.asarray(stamps_ns, dtype=np.int64)
    p = np.asarray(targets, dtype=float)
    if t.ndim != 1 or p.shape != (t.size, 3):
        raise ValueError("expected N stamps and N x 3 targets")
    if t.size and np.any(np.diff(t) < 0):
        raise ValueError("stamps must be non-decreasing")
    hold_ns = int(hold_s * 1e9)
    out = np.zeros(t.size, dtype=bool)
    start = 0
    for i in range(t.size):
        while t[i] - t[start] > hold_ns:
            start += 1
        if t[i] - t[0] < hold_ns:
            continue
        window = p[max(0, start - 1) : i + 1]
        out[i] = np.max(np.linalg.norm(window - p[i], axis=1)) <= still_tol_m
    return out


def nearest_indices(query_ns: npt.ArrayLike, stamps_ns: npt.ArrayLike) -> np.ndarray:
    """Index of the nearest stamp (sorted) for each query time."""
    s = np.asarray(stamps_ns, dtype=np.int64)
    q = np.asarray(query_ns, dtype=np.int64)
    if s.size == 0:
        raise ValueError("no stamps to associate with")
    right = np.clip(np.searchsorted(s, q), 1, s.size - 1) if s.size > 1 else np.zeros(q.size, dtype=int)
    if s.size == 1:
        return right
    left = right - 1
    return np.where(np.abs(q - s[left]) <= np.abs(s[right] - q), left, right)


def summarize(errors_m: npt.ArrayLike) -> TrackingSummary:
    e = np.asarray(errors_m, dtype=float)
    if e.size == 0:
        raise ValueError("no settled samples to summarize")
    return TrackingSummary(int(e.size), float(np.median(e)), float(np.percentile(e, 95)), float(e.max()))
