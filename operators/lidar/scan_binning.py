"""One lidar revolution (clockwise degrees) -> a LaserScan on a fixed angular grid
(counter-clockwise radians in the lidar frame).

The RPLIDAR spins clockwise seen from above and reports angles clockwise from
its 0 mark; the lidar frame is FLU with +x on that 0 mark, so a sample at
``theta_deg`` lies at ``-radians(theta_deg)``.

Grid: ``bins`` equal sectors; sector ``k`` holds samples with
``theta_deg`` in ``[k, k + 1) * 360 / bins`` (the ``k``-th sector swept in
time). A scan must have ``angle_increment > 0``, so ray ``i`` is sector
``k = bins - 1 - i`` at angle ``-(k + 0.5) * 2*pi/bins``. The rays therefore
run backwards in time: ``time_increment = -scan_time / bins`` is negative
and ``stamp_ns`` (ray 0) is the centre of the last sector swept. Each ray's
own time is ``stamp_ns + i * time_increment``, which the merger uses for
motion compensation. Where several samples fall in one sector the nearest
valid one wins; distance 0 (the device's "no measurement") becomes +Inf,
returns closer than ``range_min`` -Inf, beyond ``range_max`` +Inf, and
sectors with no sample at all NaN (REP 117).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError
from teledora.operators.lidar.laser_scan import LaserScan


class RevolutionError(TeledoraError, ValueError):
    """A revolution cannot be binned (mismatched arrays, bad timing)."""


@dataclass
class Revolution:
    """The samples of one full turn, in the order the device sent them.

    Attributes:
        angle_deg: Clockwise angles in degrees (any order, any turn count).
        distance_m: Distances in metres; 0 = no valid measurement.
        quality: Return strength (0-63 on the A1).
        start_ns: Host time at which the turn passed 0 degrees.
        scan_time_s: Duration of the turn.
    """

    angle_deg: np.ndarray
    distance_m: np.ndarray
    quality: np.ndarray
    start_ns: int
    scan_time_s: float

    def __len__(self) -> int:
        return int(np.asarray(self.angle_deg).shape[0])


@dataclass(frozen=True)
class ScanGrid:
    """The driver's angular grid and range limits.

    Args:
        bins: Sectors per turn (lidar.yaml ``grid``: one degree, as the A1 driver publishes).
        range_min_m: Closest trusted return.
        range_max_m: Farthest trusted return.
    """

    bins: int
    range_min_m: float
    range_max_m: float

    def __post_init__(self) -> None:
        if self.bins < 2:
            raise ValueError(f"bins must be >= 2, got {self.bins}")
        if not 0.0 <= self.range_min_m < self.range_max_m:
            raise ValueError("need 0 <= range_min_m < range_max_m")

    @property
    def angle_increment(self) -> float:
        return 2.0 * np.pi / self.bins

    def sector_of(self, angle_deg: npt.ArrayLike) -> np.ndarray:
        """Sector index (time order) of clockwise angles in degrees."""
        theta = np.mod(np.asarray(angle_deg, dtype=np.float64), 360.0)
        k = np.floor(theta * self.bins / 360.0).astype(np.int64)
        return np.minimum(k, self.bins - 1)  # theta just below 360 may round up to bins

    def ray_of_sector(self, sector: npt.ArrayLike) -> np.ndarray:
        """Ray index (angle order) of sector indices."""
        return self.bins - 1 - np.asarray(sector, dtype=np.int64)


def bin_revolution(revolution: Revolution, grid: ScanGrid, frame_id: str) -> LaserScan:
    """Bins one revolution onto ``grid`` (see the module docstring for the layout).

    Raises:
        RevolutionError: arrays of different lengths or a non-positive scan time.
    """
    angle = np.asarray(revolution.angle_deg, dtype=np.float64)
    dist = np.asarray(revolution.distance_m, dtype=np.float64)
    quality = np.asarray(revolution.quality, dtype=np.float64)
    if not (angle.shape == dist.shape == quality.shape) or angle.ndim != 1:
        raise RevolutionError(
            f"angle/distance/quality shapes differ: {angle.shape}, {dist.shape}, {quality.shape}"
        )
    if not (np.isfinite(revolution.scan_time_s) and revolution.scan_time_s > 0):
        raise RevolutionError(f"scan_time_s must be > 0, got {revolution.scan_time_s}")
    keep = np.isfinite(angle) & np.isfinite(dist) & (dist >= 0)
    angle, dist, quality = angle[keep], dist[keep], quality[keep]

    n = grid.bins
    ranges = np.full(n, np.nan, dtype=np.float64)
    intensities = np.zeros(n, dtype=np.float64)
    rays = grid.ray_of_sector(grid.sector_of(angle))

    measured = dist > 0
    valid = measured & (dist >= grid.range_min_m) & (dist <= grid.range_max_m)
    # Lowest priority first: "no return" (0 or too far), then "too close", then
    # valid returns sorted far to near so the nearest is written last.
    far = ~measured | (dist > grid.range_max_m)
    ranges[rays[far]] = np.inf
    close = measured & (dist < grid.range_min_m)
    ranges[rays[close]] = -np.inf
    if np.any(valid):
        order = np.argsort(-dist[valid], kind="stable")
        vr = rays[valid][order]
        ranges[vr] = dist[valid][order]
        intensities[vr] = quality[valid][order]

    dt = revolution.scan_time_s / n
    inc = grid.angle_increment
    stamp_ns = int(revolution.start_ns) + int(round((n - 0.5) * dt * 1e9))
    return LaserScan(
        stamp_ns=stamp_ns,
        frame_id=frame_id,
        angle_min=-(n - 0.5) * inc,
        angle_max=-0.5 * inc,
        angle_increment=inc,
        time_increment=-dt,
        scan_time=float(revolution.scan_time_s),
        range_min=grid.range_min_m,
        range_max=grid.range_max_m,
        ranges=ranges.astype(np.float32),
        intensities=intensities.astype(np.float32),
    )
