"""Plausibility filter for isolated range outliers in one lidar's scans.

The RPLIDAR A1's distance bytes carry no check at all: one flipped high bit
moves a return by 6 cm to 8 m at a correct angle, and nothing in the protocol
can tell. What can tell is the scene: a real return agrees with what the lidar
saw beside it or at the same bearing one turn earlier. A ray is rejected (set
to NaN, REP 117 "invalid") when all of these hold:

* it is a return (finite, within the scan's range limits);
* its nearest measured neighbour on each side (the first ray that is not
  NaN within ``neighbour_window_deg``) exists, and the ray lies beyond both by
  more than the tolerance, on the same side (both nearer or both farther): an
  isolated spike. A ray between its neighbours (a grazing wall, an edge) is
  never a spike;
* the previous scans of the same grid from the last ``previous_max_age_s``
  exist, measured something within ``previous_window_deg`` of the ray's
  bearing, and none of that agrees with the ray. A real thin object (a pole,
  a chair leg) is seen again and passes: several turns are kept because a leg
  narrower than the spacing of the samples is caught only by some turns; the
  window allows for the robot turning between turns.

"Agrees" means within ``range_tolerance_m + range_tolerance_fraction * r``
(``r`` the nearer of the two ranges). A "saw nothing" ray (+Inf) stands for
every range beyond ``range_max`` and a "too close" ray (-Inf) for every range
below ``range_min``, so a return just inside the limits agrees with them. When
a side has no measured neighbour, or there is no usable previous scan (the
first turn, after a restart, a different grid), nothing is rejected: the
filter only acts on evidence.

The previous scans kept are the ones as received, not as filtered.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from teledora.operators.lidar.laser_scan import LaserScan

_GRID_SLACK = 1e-6


@dataclass(frozen=True)
class OutlierFilterConfig:
    """When a ray counts as an isolated outlier (lidar.yaml ``outlier_filter``).

    Attributes:
        range_tolerance_m: Absolute part of the agreement tolerance.
        range_tolerance_fraction: Part of the tolerance proportional to the nearer range.
        neighbour_window_deg: How far either side to look for the nearest measured ray.
        previous_window_deg: Bearings of the previous scans, either side, that can vouch for a ray.
        previous_max_age_s: Previous scans up to this much older vouch for a ray (or refute it).
    """

    range_tolerance_m: float
    range_tolerance_fraction: float
    neighbour_window_deg: float
    previous_window_deg: float
    previous_max_age_s: float

    def __post_init__(self) -> None:
        if not self.range_tolerance_m > 0 or self.range_tolerance_fraction < 0:
            raise ValueError("range_tolerance_m must be > 0 and range_tolerance_fraction >= 0")
        if not 0 < self.neighbour_window_deg < 90 or not 0 <= self.previous_window_deg < 90:
            raise ValueError("neighbour_window_deg must be in (0, 90) and previous_window_deg in [0, 90)")
        if not self.previous_max_age_s > 0:
            raise ValueError("previous_max_age_s must be > 0")


def _intervals(ranges: np.ndarray, range_min: float, range_max: float) -> tuple[np.ndarray, np.ndarray]:
    """Each ray as the range interval it stands for; NaN bounds where it measured nothing."""
    r = np.asarray(ranges, dtype=np.float64)
    lo, hi = r.copy(), r.copy()
    lo[np.isposinf(r)], hi[np.isposinf(r)] = range_max, np.inf
    lo[np.isneginf(r)], hi[np.isneginf(r)] = -np.inf, range_min
    return lo, hi


def _shift(a: np.ndarray, d: int, wrap: bool) -> np.ndarray:
    """``out[i] = a[i - d]`` (NaN off the ends unless the scan wraps)."""
    if wrap:
        return np.roll(a, d)
    out = np.full_like(a, np.nan)
    if d > 0:
        out[d:] = a[:-d]
    elif d < 0:
        out[:d] = a[-d:]
    else:
        out[:] = a
    return out


def _gap_and_near(x: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distance from ``x`` to ``[lo, hi]`` and the nearer of ``x`` and that interval's closest point."""
    with np.errstate(invalid="ignore"):
        closest = np.clip(x, lo, hi)
        return np.abs(x - closest), np.minimum(x, closest)


def isolated_outliers(
    ranges: np.ndarray,
    previous: Sequence[np.ndarray],
    angle_increment: float,
    range_min: float,
    range_max: float,
    cfg: OutlierFilterConfig,
) -> np.ndarray:
    """Boolean mask of the rays of ``ranges`` to reject (module docstring).

    Args:
        ranges: This scan's ranges.
        previous: The previous scans' ranges on the same grid (none: nothing is rejected).
        angle_increment: Grid spacing, radians (either sign).
        range_min, range_max: The scan's range limits.
        cfg: Tolerances and windows.
    """
    r = np.asarray(ranges, dtype=np.float64)
    n = r.shape[0]
    out = np.zeros(n, dtype=bool)
    if len(previous) == 0 or n < 3 or angle_increment == 0.0:
        return out
    step_deg = abs(math.degrees(angle_increment))
    wrap = abs(n * step_deg - 360.0) < 0.5 * step_deg  # a whole turn: the first and last rays are neighbours
    with np.errstate(invalid="ignore"):
        candidate = np.isfinite(r) & (r >= range_min) & (r <= range_max)
    if not candidate.any():
        return out
    lo, hi = _intervals(r, range_min, range_max)

    def tolerance(near: np.ndarray) -> np.ndarray:
        return cfg.range_tolerance_m + cfg.range_tolerance_fraction * near

    k = max(1, int(cfg.neighbour_window_deg / step_deg + 1e-9))
    spike = candidate.copy()
    for sign in (1, -1):  # nearest measured ray before, then after
        n_lo = np.full(n, np.nan)
        n_hi = np.full(n, np.nan)
        for d in range(1, k + 1):
            s_lo, s_hi = _shift(lo, sign * d, wrap), _shift(hi, sign * d, wrap)
            take = np.isnan(n_lo) & ~np.isnan(s_lo)
            n_lo[take], n_hi[take] = s_lo[take], s_hi[take]
        gap, near = _gap_and_near(r, n_lo, n_hi)
        with np.errstate(invalid="ignore"):
            beyond = ~np.isnan(n_lo) & (gap > tolerance(near))
            side = np.where(r < n_lo, -1, 1)
        spike &= beyond
        if sign == 1:
            first_side = side
        else:
            spike &= side == first_side
    if not spike.any():
        return out

    # only the few spikes need the previous turns: gather their windows
    idx = np.flatnonzero(spike)
    kp = int(cfg.previous_window_deg / step_deg + 1e-9)
    window = idx[:, None] + np.arange(-kp, kp + 1)[None, :]
    inside = (window >= 0) & (window < n)
    if wrap:
        window, inside = window % n, np.ones_like(inside)
    window = np.clip(window, 0, n - 1)
    x = r[idx][:, None]
    seen = np.zeros(idx.size, dtype=bool)
    vouched = np.zeros(idx.size, dtype=bool)
    for p in previous:
        p_lo, p_hi = _intervals(np.asarray(p, dtype=np.float64), range_min, range_max)
        w_lo, w_hi = p_lo[window], p_hi[window]
        measured = inside & ~np.isnan(w_lo)
        gap, near = _gap_and_near(x, w_lo, w_hi)
        with np.errstate(invalid="ignore"):
            vouched |= (measured & (gap <= tolerance(near))).any(axis=1)
        seen |= measured.any(axis=1)
    out[idx[seen & ~vouched]] = True
    return out

@dataclass
class FilterResult:
    """One filtered scan.

    Attributes:
        scan: The scan with the rejected rays set to NaN (intensity 0).
        rejected: Indices of the rejected rays.
        previous_used: Whether previous scans could vouch (False: nothing was tested).
    """

    scan: LaserScan
    rejected: np.ndarray
    previous_used: bool
    rejected_ranges: np.ndarray

    def reasons(self) -> list[str]:
        """One line per rejected ray, for diagnostics."""
        return [f"range outlier: ray {i} at {r:.2f} m, beyond both neighbours and unlike the previous turn near "
                "its bearing" for i, r in zip(self.rejected.tolist(), self.rejected_ranges.tolist())]


class OutlierFilter:
    """Applies :func:`isolated_outliers` to one lidar's scans in order, keeping the recent ones.

    Counters: ``scans``, ``rays_rejected``, ``scans_without_previous``;
    :meth:`report` gives the rejections of each diagnostics period.
    """

    def __init__(self, cfg: OutlierFilterConfig) -> None:
        self.cfg = cfg
        self._previous: deque[LaserScan] = deque()
        self.scans = 0
        self.rays_rejected = 0
        self.scans_without_previous = 0
        self._reported = 0
        self._last_reason = ""

    def report(self) -> tuple[int, str]:
        """Rays rejected since the previous call, and the last one's reason; starts a new period."""
        new = self.rays_rejected - self._reported
        self._reported = self.rays_rejected
        return new, self._last_reason

    def reset(self) -> None:
        """Forgets the previous scans (after a restart of the lidar: the next scan is a first one)."""
        self._previous.clear()

    def _comparable(self, prev: LaserScan, scan: LaserScan) -> bool:
        if len(prev) != len(scan) or prev.frame_id != scan.frame_id:
            return False
        if abs(prev.angle_min - scan.angle_min) > _GRID_SLACK or abs(prev.angle_increment - scan.angle_increment) > _GRID_SLACK:
            return False
        age_s = (scan.stamp_ns - prev.stamp_ns) * 1e-9
        return 0.0 < age_s <= self.cfg.previous_max_age_s

    def apply(self, scan: LaserScan) -> FilterResult:
        """Filters ``scan`` against its neighbours and the recent scans; remembers it as received."""
        previous = [p.ranges for p in self._previous if self._comparable(p, scan)]
        usable = bool(previous)
        mask = isolated_outliers(scan.ranges, previous, scan.angle_increment, scan.range_min, scan.range_max, self.cfg)
        # what cannot vouch for this scan (too old, another grid) cannot for later ones either
        self._previous = deque(p for p in self._previous if self._comparable(p, scan))
        self._previous.append(scan)
        self.scans += 1
        if not usable:
            self.scans_without_previous += 1
        rejected = np.flatnonzero(mask)
        if rejected.size == 0:
            return FilterResult(scan, rejected, usable, np.zeros(0))
        ranges = scan.ranges.copy()
        ranges[rejected] = np.nan
        intensities = scan.intensities.copy()
        if intensities.size:
            intensities[rejected] = 0.0
        self.rays_rejected += int(rejected.size)
        result = FilterResult(replace(scan, ranges=ranges, intensities=intensities), rejected, usable,
                              scan.ranges[rejected].astype(np.float64))
        self._last_reason = result.reasons()[-1]
        return result
