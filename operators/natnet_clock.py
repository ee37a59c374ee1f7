"""Mapping Motive's high-resolution clock onto the host clock.

Motive stamps each frame with its camera mid-exposure time in ticks of its
high-resolution clock (frequency announced in SERVER_INFO). teledora stamps
messages with the host clock, so the offset between the two is estimated:

* **Echo** (preferred): the client sends ECHO_REQUEST at host time ``t0``,
  Motive answers with its clock ``s``, the reply arrives at ``t1``. Assuming a
  symmetric path, ``offset = (t0 + t1)/2 − s``, uncertain by ``(t1 − t0)/2``.
  Of the recent samples the one with the smallest round trip wins (queueing
  delays only ever lengthen it).
* **Transmit stamp** (fallback before any echo): a frame that arrives at host
  time ``a`` was transmitted at Motive time ``x``, so ``offset ≤ a − x``; the
  smallest value over recent frames bounds the one-way network delay.

A frame's host stamp is then ``mid_exposure + offset``. The offset in use and
its source are exposed so the node can log them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass


class ClockMappingError(ValueError):
    """The clock mapping cannot be computed (bad frequency, no samples)."""


@dataclass(frozen=True)
class ClockOffset:
    """``host_ns = server_ns + offset_ns``; ``uncertainty_ns`` bounds the error."""

    offset_ns: int
    uncertainty_ns: int
    source: str


class MotiveClockMapper:
    """Keeps the best recent estimate of the Motive → host clock offset.

    Args:
        frequency_hz: Motive's high-resolution clock frequency (SERVER_INFO).
        window: How many recent samples of each kind are considered (old ones
            are forgotten so a slowly drifting clock is followed).
    """

    def __init__(self, frequency_hz: int, window: int = 16) -> None:
        if frequency_hz <= 0:
            raise ClockMappingError(f"clock frequency must be positive, got {frequency_hz}")
        if window < 1:
            raise ClockMappingError(f"window must be >= 1, got {window}")
        self.frequency_hz = int(frequency_hz)
        self._echo: deque[tuple[int, int]] = deque(maxlen=window)  # (round trip, offset)
        self._transmit: deque[int] = deque(maxlen=window * 8)

    def ticks_to_ns(self, ticks: int) -> int:
        """Motive ticks as nanoseconds of Motive's clock (exact integer math)."""
        return int(ticks) * 1_000_000_000 // self.frequency_hz

    def add_echo(self, sent_host_ns: int, server_ticks: int, received_host_ns: int) -> None:
        """Records one echo round trip. Replies that arrive before they were sent are ignored."""
        rtt = int(received_host_ns) - int(sent_host_ns)
        if rtt < 0:
            return
        offset = (int(sent_host_ns) + int(received_host_ns)) // 2 - self.ticks_to_ns(server_ticks)
        self._echo.append((rtt, offset))

    def add_transmit(self, arrival_host_ns: int, transmit_ticks: int) -> None:
        """Records when a frame transmitted at ``transmit_ticks`` arrived on the host."""
        if transmit_ticks > 0:
            self._transmit.append(int(arrival_host_ns) - self.ticks_to_ns(transmit_ticks))

    @property
    def has_estimate(self) -> bool:
        return bool(self._echo or self._transmit)

    def offset(self) -> ClockOffset:
        """The current best offset.

        Raises:
            ClockMappingError: no echo and no transmit sample yet.
        """
        if self._echo:
            rtt, off = min(self._echo)
            return ClockOffset(off, rtt // 2, "echo")
        if self._transmit:
            return ClockOffset(min(self._transmit), -1, "transmit")
        raise ClockMappingError("no clock samples yet (no echo reply, no frame with a transmit stamp)")

    def to_host_ns(self, server_ticks: int) -> int:
        """Host-clock time of a Motive tick count."""
        return self.ticks_to_ns(server_ticks) + self.offset().offset_ns
