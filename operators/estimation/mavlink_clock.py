"""Maps an autopilot's boot clock onto the dataflow host clock with MAVLink TIMESYNC.

The exchange: the host sends ``TIMESYNC(tc1=0, ts1=host_ns)``; the autopilot
answers ``TIMESYNC(tc1=autopilot_ns, ts1=host_ns)`` (ArduPilot puts its boot
time in nanoseconds in ``tc1`` and echoes ``ts1``). With ``now`` the host time
at which the answer arrived, the round trip is ``now - ts1`` and, assuming the
two legs take as long, ``offset = tc1 - (ts1 + now) / 2`` is autopilot time
minus host time. Samples with a long round trip carry a large error (up to
half the round trip), so the mapping keeps the offset of the fastest recent
exchange. An autopilot reboot (its clock jumping backwards) or an offset far
from the current one starts over.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from teledora.operators.errors import TeledoraError


class ClockNotSynced(TeledoraError, RuntimeError):
    """No TIMESYNC exchange has completed yet: autopilot time cannot be mapped."""


@dataclass(frozen=True)
class TimesyncSample:
    """One completed exchange (all in ns)."""

    offset_ns: int
    round_trip_ns: int
    received_ns: int


class MavlinkClock:
    """Autopilot-time → host-time mapping from TIMESYNC round trips.

    Args:
        window: How many recent samples to choose the fastest from.
        max_round_trip_ns: Exchanges slower than this are ignored (default 50 ms).
        jump_ns: An offset that differs from the current one by more than this means
            the autopilot rebooted or its clock was reset: the history is dropped.
    """

    def __init__(self, window: int = 10, max_round_trip_ns: int = 50_000_000, jump_ns: int = 500_000_000) -> None:
        if window < 1:
            raise ValueError("window must be >= 1")
        self._samples: deque[TimesyncSample] = deque(maxlen=window)
        self.max_round_trip_ns = max_round_trip_ns
        self.jump_ns = jump_ns
        self.rejected = 0
        self.resets = 0
        self._last_autopilot_ns: int | None = None

    @property
    def synced(self) -> bool:
        """True once one exchange has been accepted."""
        return bool(self._samples)

    def add_exchange(self, ts1_host_ns: int, tc1_autopilot_ns: int, received_host_ns: int) -> bool:
        """Adds a completed exchange. Returns False when it was rejected (too slow, or
        answered before it was asked)."""
        rtt = received_host_ns - ts1_host_ns
        if rtt < 0 or rtt > self.max_round_trip_ns or tc1_autopilot_ns <= 0:
            self.rejected += 1
            return False
        offset = tc1_autopilot_ns - (ts1_host_ns + received_host_ns) // 2
        rebooted = self._last_autopilot_ns is not None and tc1_autopilot_ns < self._last_autopilot_ns
        if self._samples and (rebooted or abs(offset - self.offset_ns) > self.jump_ns):
            self._samples.clear()
            self.resets += 1
        self._last_autopilot_ns = tc1_autopilot_ns
        self._samples.append(TimesyncSample(int(offset), int(rtt), int(received_host_ns)))
        return True

    def _best(self) -> TimesyncSample:
        if not self._samples:
            raise ClockNotSynced("no TIMESYNC reply accepted yet")
        return min(self._samples, key=lambda s: s.round_trip_ns)

    @property
    def offset_ns(self) -> int:
        """Autopilot time minus host time (ns), from the fastest recent exchange."""
        return self._best().offset_ns

    @property
    def round_trip_ns(self) -> int:
        """Round trip of the exchange the offset comes from (its error is at most half this)."""
        return self._best().round_trip_ns

    def to_host_ns(self, autopilot_ns: int) -> int:
        """Host time (ns) of an autopilot boot time (ns)."""
        return int(autopilot_ns) - self.offset_ns

    def boot_ms_to_host_ns(self, time_boot_ms: int) -> int:
        """Host time (ns) of a ``time_boot_ms`` field."""
        return self.to_host_ns(int(time_boot_ms) * 1_000_000)

    def reset(self) -> None:
        """Forgets every sample (the link was lost; the autopilot may have rebooted)."""
        self._samples.clear()
        self._last_autopilot_ns = None
        self.resets += 1
