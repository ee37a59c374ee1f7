"""In-memory LaserScan (REP 117) with the geometry a consumer needs: per-ray
angles, per-ray times and the validity of each return.

Field meanings follow the message contract (kind ``LaserScan``): ray ``i``
points at ``angle_min + i * angle_increment`` (radians, counter-clockwise in
``frame_id``) and was measured at ``stamp_ns + i * time_increment`` (seconds).
Ranges hold +Inf for "no return", -Inf for "too close", NaN for "invalid".
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

import numpy as np

from teledora.operators.errors import TeledoraError

_ANGLE_SLACK = 1e-6


class ScanGeometryError(TeledoraError, ValueError):
    """A scan's angle fields do not describe its number of rays."""


@dataclass
class LaserScan:
    """One 2D scan. ``ranges``/``intensities`` are float32 arrays."""

    stamp_ns: int
    frame_id: str
    angle_min: float
    angle_max: float
    angle_increment: float
    time_increment: float
    scan_time: float
    range_min: float
    range_max: float
    ranges: np.ndarray
    intensities: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.float32))

    def __post_init__(self) -> None:
        self.ranges = np.asarray(self.ranges, dtype=np.float32)
        self.intensities = np.asarray(self.intensities, dtype=np.float32)
        self.stamp_ns = int(self.stamp_ns)

    @classmethod
    def from_message(cls, msg: Mapping[str, Any]) -> "LaserScan":
        """Builds a scan from a decoded ``LaserScan`` message dict and checks its geometry."""
        scan = cls(**{f.name: msg[f.name] for f in fields(cls)})
        scan.check_geometry()
        return scan

    def to_message(self) -> dict[str, Any]:
        """The ``LaserScan`` message dict of this scan."""
        msg = {f.name: getattr(self, f.name) for f in fields(self)}
        msg["stamp_ns"] = int(self.stamp_ns)
        return msg

    def __len__(self) -> int:
        return int(self.ranges.shape[0])

    def check_geometry(self) -> None:
        """Raises :class:`ScanGeometryError` when the angle fields, the ray count
        and the intensities disagree (an empty scan is allowed)."""
        n = len(self)
        if self.intensities.size not in (0, n):
            raise ScanGeometryError(f"{n} ranges but {self.intensities.size} intensities")
        if n == 0:
            return
        if not np.isfinite([self.angle_min, self.angle_max, self.angle_increment, self.time_increment]).all():
            raise ScanGeometryError("angle/time fields must be finite")
        if n == 1:
            return
        if self.angle_increment == 0.0:
            raise ScanGeometryError("angle_increment is 0 with more than one ray")
        expected_max = self.angle_min + (n - 1) * self.angle_increment
        if abs(expected_max - self.angle_max) > max(_ANGLE_SLACK, 0.01 * abs(self.angle_increment)):
            raise ScanGeometryError(
                f"{n} rays from angle_min {self.angle_min:.6f} by {self.angle_increment:.6f} end at "
                f"{expected_max:.6f}, but angle_max is {self.angle_max:.6f}"
            )
        if abs(n * self.angle_increment) > 2 * np.pi + abs(self.angle_increment) * 0.5:
            raise ScanGeometryError(f"{n} rays of {self.angle_increment:.6f} rad cover more than one turn")

    def angles(self) -> np.ndarray:
        """Ray angles in radians (float64), in ``frame_id``."""
        return self.angle_min + np.arange(len(self), dtype=np.float64) * self.angle_increment

    def ray_offsets_s(self) -> np.ndarray:
        """Each ray's time relative to ``stamp_ns``, seconds."""
        return np.arange(len(self), dtype=np.float64) * self.time_increment

    def ray_stamps_ns(self) -> np.ndarray:
        """Each ray's measurement time, ns (int64)."""
        return self.stamp_ns + np.round(self.ray_offsets_s() * 1e9).astype(np.int64)

    def valid_mask(self) -> np.ndarray:
        """True for finite returns inside [range_min, range_max]."""
        r = self.ranges
        return np.isfinite(r) & (r >= self.range_min) & (r <= self.range_max)

    def no_return_mask(self) -> np.ndarray:
        """True for rays that saw nothing (+Inf, or beyond range_max)."""
        r = self.ranges
        with np.errstate(invalid="ignore"):
            return np.isposinf(r) | (np.isfinite(r) & (r > self.range_max))

    def time_span_ns(self) -> tuple[int, int]:
        """(earliest, latest) ray time, ns."""
        if len(self) == 0:
            return self.stamp_ns, self.stamp_ns
        last = self.stamp_ns + int(round((len(self) - 1) * self.time_increment * 1e9))
        return min(self.stamp_ns, last), max(self.stamp_ns, last)
