"""Host times of streamed lidar bytes from the device's own, measured pace.

An RPLIDAR carries no clock, so a sample's time has to come from when its
bytes reach the host. Each read gives one observation: every byte up to
stream position ``pos`` had arrived by the read's host time ``t``. The device
emits samples at a steady rate (an A1: ~2000 per second, ~100 us per byte,
slower than the 86.8 us per byte of its 115200 baud line), so over a window the
observations lie on or above the line ``t = t0 + pos * byte_ns``; a read that
came late only lies higher. :class:`SampleClock` fits that line: the slope by
least squares, refitted twice on the observations below the median residual, the
offset through the earliest observation (the smallest delay seen in the
window). A byte's time is then read off the line.

What it covers: the device's rate, whatever it is, and reads of any size or
lateness. What not: the constant transport delay (line time of the last
sample plus the USB bridge's latency) is part of every observation and stays
in the stamps; so does a change of pace shorter than the window.

Until the window spans ``min_span_s`` the clock falls back on the line rate
counted back from the newest read (what a reader assuming bytes at line rate
would do).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import numpy.typing as npt


class SampleClock:
    """Maps stream positions (bytes since the scan started) to host times.

    Args:
        line_byte_ns: Time of one byte at the line rate (10 bit times at 8N1);
            the device can send no faster, so the fitted pace never goes below it.
        window_s: How much history the fit uses.
        min_span_s: Shortest history the fit is trusted on.
        max_points: Bound on the observations kept.
    """

    def __init__(self, line_byte_ns: float, window_s: float, min_span_s: float = 0.1, max_points: int = 1024) -> None:
        if not line_byte_ns > 0:
            raise ValueError("line_byte_ns must be > 0")
        if not window_s > min_span_s > 0:
            raise ValueError("need window_s > min_span_s > 0")
        self.line_byte_ns = float(line_byte_ns)
        self.window_ns = int(window_s * 1e9)
        self.min_span_ns = int(min_span_s * 1e9)
        self._points: deque[tuple[int, int]] = deque(maxlen=max_points)
        self._fit: tuple[float, float, float] | None = None  # (pos0, t0, byte_ns)

    def reset(self) -> None:
        """Forgets every observation (the stream restarted)."""
        self._points.clear()
        self._fit = None

    def observe(self, pos: int, read_ns: int) -> None:
        """All bytes before stream position ``pos`` had arrived by ``read_ns``."""
        if self._points and pos <= self._points[-1][0]:
            return  # nothing new arrived: says nothing about the pace
        self._points.append((int(pos), int(read_ns)))
        while self._points and read_ns - self._points[0][1] > self.window_ns:
            self._points.popleft()
        self._fit = self._refit()

    @property
    def byte_ns(self) -> float | None:
        """The fitted time per byte, or None while the window is too short."""
        return None if self._fit is None else self._fit[2]

    def _refit(self) -> tuple[float, float, float] | None:
        if len(self._points) < 4:
            return None
        pts = np.asarray(self._points, dtype=np.float64)
        pos, t = pts[:, 0], pts[:, 1]
        if t[-1] - t[0] < self.min_span_ns:
            return None
        pos0, t0 = pos[0], t[0]
        x, y = pos - pos0, t - t0
        slope = self._slope(x, y)
        for _ in range(2):  # late reads lie above the line: refit on the lower half
            resid = y - slope * x
            keep = resid <= np.median(resid)
            if keep.sum() >= 3 and np.ptp(x[keep]) > 0:
                slope = self._slope(x[keep], y[keep])
        slope = max(slope, self.line_byte_ns)
        resid = y - slope * x
        k = int(np.argmin(resid))
        return float(pos[k]), float(t[k]), float(slope)

    @staticmethod
    def _slope(x: np.ndarray, y: np.ndarray) -> float:
        xm, ym = x.mean(), y.mean()
        den = float(((x - xm) ** 2).sum())
        return float(((x - xm) * (y - ym)).sum() / den) if den > 0 else 0.0

    def stamp(self, pos: npt.ArrayLike) -> np.ndarray:
        """Host times (ns, int64) at which the bytes ending at ``pos`` arrived."""
        p = np.asarray(pos, dtype=np.float64)
        if self._fit is None:
            if not self._points:
                raise ValueError("no observation yet")
            last_pos, last_t = self._points[-1]
            return (last_t - (last_pos - p) * self.line_byte_ns).astype(np.int64)
        pos0, t0, slope = self._fit
        return (t0 + (p - pos0) * slope).astype(np.int64)
