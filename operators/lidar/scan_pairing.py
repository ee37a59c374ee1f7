"""Which scans of two lidars are merged together.

Two scans pair when their stamps are within ``tolerance_s``; each scan is used
once. Scans are matched in the order of their stamps, not of their arrival:
each lidar's scans wait in a short queue until the other lidar's scans show
what can pair with them, so one lidar's scans arriving late (its node or the
merger short of CPU) change nothing. While a lidar is silent (no scan for
``silence_timeout_s`` of host time) the other one's scans go out alone,
flagged. Times are passed in.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from teledora.operators.errors import TeledoraError
from teledora.operators.lidar.laser_scan import LaserScan

MAX_WAITING = 32  # scans per lidar waiting for a partner (3 s of a 10 Hz lidar)


class UnknownSourceError(TeledoraError, KeyError):
    """A scan came from a lidar the pairer was not configured for."""


@dataclass
class ScanGroup:
    """Scans to merge into one output: two paired ones, or one alone."""

    scans: dict[str, LaserScan]
    alone: bool = False
    silent: list[str] = field(default_factory=list)


class ScanPairer:
    """Pairs the scans of two named lidars by stamp.

    The oldest waiting scan (by stamp) pairs with the other lidar's oldest
    waiting scan when their stamps are within the tolerance. It is dropped
    as ``unpaired`` when the other lidar's scans have passed it by more than
    the tolerance (no later one can pair with it) or its own lidar's next
    scan is already waiting and nearer to that partner: with a 5.5 Hz and a
    10 Hz lidar, every other fast scan. ``stale`` counts faults: a scan older
    than one its own lidar already sent, or one pushed out of a full queue.
    Otherwise a scan waits.

    Args:
        sources: The two lidar names, e.g. ("front", "back").
        tolerance_s: Largest stamp difference of a pair (inclusive).
        silence_timeout_s: A lidar with no scan for this long (host time) is
            treated as stopped and the other is published alone.
    """

    def __init__(self, sources: tuple[str, str] = ("front", "back"), tolerance_s: float = 0.1, silence_timeout_s: float = 0.5) -> None:
        if len(sources) != 2 or sources[0] == sources[1]:
            raise ValueError(f"need two distinct source names, got {sources}")
        self.sources = tuple(sources)
        self.tolerance_ns = int(round(tolerance_s * 1e9))
        self.silence_timeout_ns = int(round(silence_timeout_s * 1e9))
        self._waiting: dict[str, deque[LaserScan]] = {s: deque() for s in self.sources}
        self._newest_ns: dict[str, int | None] = {s: None for s in self.sources}
        self._last_seen_ns: dict[str, int | None] = {s: None for s in self.sources}
        self._started_ns: int | None = None
        self.paired = 0
        self.alone = 0
        self.unpaired_dropped = 0
        self.stale_dropped = 0
        self.waiting_at_end = 0

    def _other(self, source: str) -> str:
        if source not in self._waiting:
            raise UnknownSourceError(f"unknown lidar {source!r}; configured: {self.sources}")
        return self.sources[1] if source == self.sources[0] else self.sources[0]

    def is_silent(self, source: str, now_ns: int) -> bool:
        """True when ``source`` has not delivered a scan for the silence timeout."""
        last = self._last_seen_ns[source]
        ref = last if last is not None else self._started_ns
        return ref is not None and now_ns - ref > self.silence_timeout_ns

    def silent_sources(self, now_ns: int) -> list[str]:
        return [s for s in self.sources if self.is_silent(s, now_ns)]

    def waiting(self, source: str) -> int:
        """Scans of ``source`` waiting for a partner."""
        self._other(source)
        return len(self._waiting[source])

    def offer(self, source: str, scan: LaserScan, now_ns: int) -> list[ScanGroup]:
        """Adds a scan received at host time ``now_ns``; returns the pairs it
        completes, oldest first. Scans released alone come from ``poll``, which
        a node calls once it has offered every scan it had received (a scan
        still unread must not make its lidar look silent)."""
        self._other(source)
        if self._started_ns is None:
            self._started_ns = now_ns
        self._last_seen_ns[source] = now_ns
        newest = self._newest_ns[source]
        if newest is not None and scan.stamp_ns < newest:
            self.stale_dropped += 1  # older than a scan this lidar already sent
            return []
        self._newest_ns[source] = scan.stamp_ns
        queue = self._waiting[source]
        queue.append(scan)
        if len(queue) > MAX_WAITING:
            queue.popleft()
            self.stale_dropped += 1
        return self._match()

    def _match(self) -> list[ScanGroup]:
        out: list[ScanGroup] = []
        first, second = self.sources
        while self._waiting[first] and self._waiting[second]:
            # the lidar whose oldest waiting scan is the oldest of all
            mine = first if self._waiting[first][0].stamp_ns <= self._waiting[second][0].stamp_ns else second
            theirs = self._other(mine)
            own, other = self._waiting[mine], self._waiting[theirs]
            oldest, partner = own[0], other[0]
            gap = partner.stamp_ns - oldest.stamp_ns
            if gap > self.tolerance_ns:
                own.popleft()  # every later scan of the other lidar is newer still
                self.unpaired_dropped += 1
            elif len(own) > 1 and abs(own[1].stamp_ns - partner.stamp_ns) < gap:
                own.popleft()  # its own lidar's next scan is the nearer partner
                self.unpaired_dropped += 1
            else:
                own.popleft()
                other.popleft()
                self.paired += 1
                out.append(ScanGroup({mine: oldest, theirs: partner}))
        return out

    def poll(self, now_ns: int) -> list[ScanGroup]:
        """Releases waiting scans whose partner lidar has gone silent, oldest first."""
        out: list[ScanGroup] = []
        for source in self.sources:
            other = self._other(source)
            queue = self._waiting[source]
            if queue and self.is_silent(other, now_ns):
                while queue:
                    self.alone += 1
                    out.append(ScanGroup({source: queue.popleft()}, alone=True, silent=[other]))
        return out

    def end(self) -> int:
        """The inputs have ended: the scans still waiting can never pair. They are
        counted in ``waiting_at_end`` (and returned) and let go. (Matching leaves
        at most one lidar with scans waiting.)"""
        left = sum(len(queue) for queue in self._waiting.values())
        for queue in self._waiting.values():
            queue.clear()
        self.waiting_at_end += left
        return left
