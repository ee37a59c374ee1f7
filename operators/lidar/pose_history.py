"""A short history of planar base poses (odom frame) with interpolation in time.

Odometry arrives at its own rate; a scan's rays need the pose at their own
times. Between samples the pose is interpolated linearly (yaw along the
shorter arc); a little past the newest sample it is extrapolated with the
newest twist; anything further is an error the caller must handle.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError
from teledora.operators.geometry import Pose2D


class PoseOutOfRangeError(TeledoraError, LookupError):
    """A pose was asked for a time the history does not cover."""


@dataclass(frozen=True)
class OdometrySample:
    """The base's planar pose (odom frame) at ``stamp_ns``, with its body-frame twist."""

    stamp_ns: int
    pose: Pose2D
    vx: float = 0.0
    vy: float = 0.0
    wz: float = 0.0


class PoseHistory:
    """Time-ordered planar poses.

    Args:
        max_age_s: Poses older than the newest by more than this are forgotten.
        max_extrapolation_s: How far before the oldest / after the newest pose
            a query may reach (extrapolated with the nearest sample's twist).
    """

    def __init__(self, max_age_s: float = 2.0, max_extrapolation_s: float = 0.2) -> None:
        self.max_age_ns = int(max_age_s * 1e9)
        self.max_extrapolation_ns = int(max_extrapolation_s * 1e9)
        self._poses: deque[OdometrySample] = deque()
        self.out_of_order = 0
        self._arrays: tuple[np.ndarray, ...] | None = None  # cached columns, rebuilt after add()

    def __len__(self) -> int:
        return len(self._poses)

    @property
    def newest(self) -> OdometrySample | None:
        return self._poses[-1] if self._poses else None

    def add(self, sample: OdometrySample) -> bool:
        """Appends a sample; returns False (and counts it) when it is not newer than the last."""
        if self._poses and sample.stamp_ns <= self._poses[-1].stamp_ns:
            self.out_of_order += 1
            return False
        self._poses.append(sample)
        while self._poses and sample.stamp_ns - self._poses[0].stamp_ns > self.max_age_ns:
            self._poses.popleft()
        self._arrays = None
        return True

    def _columns(self) -> tuple[np.ndarray, ...]:
        if self._arrays is None:
            n = len(self._poses)
            cols = np.array([(p.stamp_ns, p.pose.x, p.pose.y, p.pose.yaw) for p in self._poses], dtype=np.float64).reshape(n, 4)
            stamps = np.fromiter((p.stamp_ns for p in self._poses), dtype=np.int64, count=n)
            self._arrays = (stamps, cols[:, 1].copy(), cols[:, 2].copy(), np.unwrap(cols[:, 3]))
        return self._arrays

    def covers(self, stamp_ns: int) -> bool:
        """True when ``stamp_ns`` can be answered (within the extrapolation margin)."""
        if not self._poses:
            return False
        return (
            self._poses[0].stamp_ns - self.max_extrapolation_ns
            <= stamp_ns
            <= self._poses[-1].stamp_ns + self.max_extrapolation_ns
        )

    def interpolate(self, stamps_ns: npt.ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Poses (x, y, yaw arrays) at the given times.

        Raises:
            PoseOutOfRangeError: empty history or a time outside the covered span.
        """
        t = np.atleast_1d(np.asarray(stamps_ns, dtype=np.int64))
        if not self._poses:
            raise PoseOutOfRangeError("no odometry received yet")
        lo, hi = int(t.min()), int(t.max())
        if not (self.covers(lo) and self.covers(hi)):
            raise PoseOutOfRangeError(
                f"pose wanted over [{lo}, {hi}] ns but odometry covers "
                f"[{self._poses[0].stamp_ns}, {self._poses[-1].stamp_ns}] ns "
                f"(+/- {self.max_extrapolation_ns * 1e-9:.3f} s)"
            )
        stamps, xs, ys, yaws = self._columns()
        rel = (t - stamps[0]).astype(np.float64)
        srel = (stamps - stamps[0]).astype(np.float64)
        x = np.interp(rel, srel, xs)
        y = np.interp(rel, srel, ys)
        yaw = np.interp(rel, srel, yaws)
        # Outside the samples np.interp clamps; extrapolate with the end twist instead.
        for end, mask in ((self._poses[-1], t > stamps[-1]), (self._poses[0], t < stamps[0])):
            if np.any(mask):
                dt = (t[mask] - end.stamp_ns) * 1e-9
                c, s = np.cos(end.pose.yaw), np.sin(end.pose.yaw)
                x[mask] = end.pose.x + (c * end.vx - s * end.vy) * dt
                y[mask] = end.pose.y + (s * end.vx + c * end.vy) * dt
                yaw[mask] = (yaws[-1] if end is self._poses[-1] else yaws[0]) + end.wz * dt
        return x, y, yaw
