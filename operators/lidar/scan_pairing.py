"""Which scans of two lidars are merged together.

Two scans pair when their stamps are within ``tolerance_s``; each scan is used
once. While a lidar is silent (no scan for ``silence_timeout_s`` of host
time) the other one's scans go out alone, flagged. Times are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from teledora.operators.errors import TeledoraError
from teledora.operators.lidar.laser_scan import LaserScan


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
        self._pending: dict[str, LaserScan | None] = {s: None for s in self.sources}
        self._last_seen_ns: dict[str, int | None] = {s: None for s in self.sources}
        self._started_ns: int | None = None
        self.paired = 0
        self.alone = 0
        self.unpaired_dropped = 0
        self.stale_dropped = 0

    def _other(self, source: str) -> str:
        if source not in self._pending:
            raise UnknownSourceError(f"unknown lidar {source!r}; configured: {self.sources}")
        return self.sources[1] if source == self.sources[0] else self.sources[0]

    def is_silent(self, source: str, now_ns: int) -> bool:
        """True when ``source`` has not delivered a scan for the silence timeout."""
        last = self._last_seen_ns[source]
        ref = last if last is not None else self._started_ns
        return ref is not None and now_ns - ref > self.silence_timeout_ns

    def silent_sources(self, now_ns: int) -> list[str]:
        return [s for s in self.sources if self.is_silent(s, now_ns)]

    def offer(self, source: str, scan: LaserScan, now_ns: int) -> list[ScanGroup]:
        """Adds a scan received at host time ``now_ns``; returns groups ready to merge."""
        other = self._other(source)
        if self._started_ns is None:
            self._started_ns = now_ns
        self._last_seen_ns[source] = now_ns
        out: list[ScanGroup] = []
        partner = self._pending[other]
        if partner is not None:
            gap = scan.stamp_ns - partner.stamp_ns
            if abs(gap) <= self.tolerance_ns:
                self._pending[other] = None
                if self._pending[source] is not None:
                    self.unpaired_dropped += 1
                    self._pending[source] = None
                self.paired += 1
                out.append(ScanGroup({source: scan, other: partner}))
                return out
            if gap > self.tolerance_ns:
                # The partner is too old for this or any later scan of ``source``.
                self._pending[other] = None
                self.stale_dropped += 1
            elif not self.is_silent(other, now_ns):
                # This scan is older than the partner by more than the tolerance:
                # no later scan of ``other`` can pair with it.
                self.stale_dropped += 1
                return out
        if self._pending[source] is not None:
            self.unpaired_dropped += 1
        self._pending[source] = scan
        out.extend(self.poll(now_ns))
        return out

    def poll(self, now_ns: int) -> list[ScanGroup]:
        """Releases waiting scans whose partner lidar has gone silent."""
        out: list[ScanGroup] = []
        for source in self.sources:
            scan = self._pending[source]
            other = self._other(source)
            if scan is not None and self.is_silent(other, now_ns):
                self._pending[source] = None
                self.alone += 1
                out.append(ScanGroup({source: scan}, alone=True, silent=[other]))
        return out
