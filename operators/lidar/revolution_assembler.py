"""Cuts a stream of lidar samples into revolutions and times each one.

The device flags the first sample of every turn (the S bit) but carries no
clock. The caller gives each sample a host arrival time (from the measured
pace of the stream: :mod:`teledora.operators.lidar.sample_clock`); a turn's
start is the arrival of its first sample moved back by the angle it had
already swept past 0, and its duration is the distance to the next turn's
start.

Memory is bounded: a turn that grows past ``max_samples`` (a frozen motor
streams samples but never starts a new turn) is dropped and the samples up to
the next start flag are counted, not kept.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from teledora.operators.lidar.scan_binning import Revolution


class RevolutionAssembler:
    """Collects samples until the next start flag, then emits a :class:`Revolution`.

    Args:
        min_samples: Turns with fewer samples are dropped (counted in
            ``dropped_short``): a stalled motor or a partial turn after a restart.
        max_samples: Turns with more samples are dropped (``dropped_long``)
            and their samples not kept beyond this many; one that then also
            lasted too long counts in ``dropped_slow`` as well.
        max_scan_time_s: Turns longer than this are dropped (``dropped_slow``;
            the last one's duration is ``last_dropped_scan_time_s``).
        nominal_scan_time_s: Turn duration assumed until one has been measured.
    """

    def __init__(self, min_samples: int = 50, max_samples: int = 2000, max_scan_time_s: float = 1.0,
                 nominal_scan_time_s: float = 1.0 / 5.5) -> None:
        if not 1 <= min_samples < max_samples:
            raise ValueError(f"need 1 <= min_samples < max_samples, got {min_samples}, {max_samples}")
        self.min_samples = min_samples
        self.max_samples = max_samples
        self._last_period_s = nominal_scan_time_s
        self.max_scan_time_s = max_scan_time_s
        self.dropped_short = 0
        self.dropped_slow = 0
        self.dropped_long = 0
        self.discarded_before_first_start = 0
        self.discarded_overlong = 0
        self.last_dropped_scan_time_s = 0.0
        self.last_dropped_samples = 0
        self.revolutions = 0
        self._held = 0  # samples held for the turn in progress
        self._overlong = False
        self._angle: list[np.ndarray] = []
        self._dist: list[np.ndarray] = []
        self._quality: list[np.ndarray] = []
        self._start_ns: int | None = None
        self._first_angle_deg = 0.0

    def reset(self) -> None:
        """Forgets the turn in progress (after a restart of the scan)."""
        self._angle, self._dist, self._quality = [], [], []
        self._start_ns = None
        self._held = 0
        self._overlong = False

    @property
    def held_samples(self) -> int:
        """Samples held for the turn in progress (never more than ``max_samples``)."""
        return self._held

    def add(
        self,
        start: npt.ArrayLike,
        angle_deg: npt.ArrayLike,
        distance_m: npt.ArrayLike,
        quality: npt.ArrayLike,
        arrival_ns: npt.ArrayLike,
    ) -> list[Revolution]:
        """Adds samples (parallel arrays, in device order); returns the turns they complete."""
        start = np.asarray(start, dtype=bool)
        angle = np.asarray(angle_deg, dtype=np.float64)
        dist = np.asarray(distance_m, dtype=np.float64)
        qual = np.asarray(quality, dtype=np.float64)
        arrival = np.asarray(arrival_ns, dtype=np.int64)
        done: list[Revolution] = []
        cuts = np.flatnonzero(start)
        pos = 0
        for cut in list(cuts) + [len(start)]:
            if cut > pos:
                if self._start_ns is None:
                    self.discarded_before_first_start += int(cut - pos)
                elif self._overlong:
                    self.discarded_overlong += int(cut - pos)
                else:
                    room = self.max_samples - self._held
                    take = min(int(cut - pos), room + 1)  # one past the limit marks the turn overlong
                    self._angle.append(angle[pos:pos + take])
                    self._dist.append(dist[pos:pos + take])
                    self._quality.append(qual[pos:pos + take])
                    self._held += take
                    if self._held > self.max_samples:
                        self.dropped_long += 1
                        self.last_dropped_samples = self._held
                        self.discarded_overlong += int(cut - pos) - take + self._held
                        self._angle, self._dist, self._quality = [], [], []
                        self._held = 0
                        self._overlong = True
            if cut == len(start):
                break
            # Sample ``cut`` begins a new turn: it passed 0 deg angle/360 turns ago.
            new_start = int(arrival[cut])
            period = self._last_period_s
            new_start -= int(round((angle[cut] % 360.0) / 360.0 * period * 1e9))
            rev = self._close(new_start)
            if rev is not None:
                done.append(rev)
            self._start_ns = new_start
            pos = cut
        return done

    def _close(self, next_start_ns: int) -> Revolution | None:
        if self._start_ns is None:
            return None
        scan_time = (next_start_ns - self._start_ns) * 1e-9
        angle = np.concatenate(self._angle) if self._angle else np.zeros(0)
        dist = np.concatenate(self._dist) if self._dist else np.zeros(0)
        qual = np.concatenate(self._quality) if self._quality else np.zeros(0)
        self._angle, self._dist, self._quality = [], [], []
        self._held = 0
        if self._overlong:  # already dropped and counted; its duration still tells a slow motor
            self._overlong = False
            if scan_time > self.max_scan_time_s:
                self.dropped_slow += 1
                self.last_dropped_scan_time_s = scan_time
            return None
        if angle.shape[0] < self.min_samples:
            self.dropped_short += 1
            self.last_dropped_samples = int(angle.shape[0])
            return None
        if not 0.0 < scan_time <= self.max_scan_time_s:
            self.dropped_slow += 1
            self.last_dropped_scan_time_s = scan_time
            return None
        self._last_period_s = scan_time
        self.revolutions += 1
        return Revolution(angle, dist, qual, self._start_ns, scan_time)
