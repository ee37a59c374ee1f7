"""Mapping Motive's high-resolution clock onto the host clock.

Motive stamps each frame with its camera mid-exposure time in ticks of its
high-resolution clock (frequency announced in SERVER_INFO). teledora stamps
messages with the host clock, so the offset between the two is estimated:

* **Echo** (preferred): the client sends ECHO_REQUEST at host time ``t0``,
  Motive answers with its clock ``s``, the reply arrives at ``t1``. Assuming a
  symmetric path, ``offset = (t0 + t1)/2 − s``, uncertain by ``(t1 − t0)/2``.
  Of the recent samples the one with the smallest round trip wins (queueing
  delays only ever lengthen it). Once the clean echoes (round trip within
  twice the best plus 0.1 ms) span ``FIT_MIN_SPAN_S`` or more, a straight
  line is fitted through their offsets against Motive time, so the relative
  drift of the two clocks (tens of ppm) is followed instead of accumulating.
* **Transmit stamp** (fallback before any echo): a frame that arrives at host
  time ``a`` was transmitted at Motive time ``x``, so ``offset ≤ a − x``; the
  smallest value over recent frames bounds the one-way network delay.

A frame's host stamp is then ``mid_exposure + offset``. The offset in use and
its source are exposed so the node can log them.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from teledora.operators.errors import TeledoraError

FIT_MIN_SAMPLES = 8
FIT_MIN_SPAN_S = 10.0
CLEAN_RTT_MARGIN_NS = 100_000


class ClockMappingError(TeledoraError, ValueError):
    """The clock mapping cannot be computed (bad frequency, no samples)."""


@dataclass(frozen=True)
class ClockOffset:
    """``host_ns = server_ns + offset_ns``; ``uncertainty_ns`` bounds the error."""

    offset_ns: int
    uncertainty_ns: int
    source: str
    drift_ppm: float = 0.0


class MotiveClockMapper:
    """Keeps the best recent estimate of the Motive → host clock offset.

    Args:
        frequency_hz: Motive's high-resolution clock frequency (SERVER_INFO).
        window: How many recent echoes are considered (old ones are
            forgotten); transmit samples keep 8× as many.
    """

    def __init__(self, frequency_hz: int, window: int = 32) -> None:
        if frequency_hz <= 0:
            raise ClockMappingError(f"clock frequency must be positive, got {frequency_hz}")
        if window < 1:
            raise ClockMappingError(f"window must be >= 1, got {window}")
        self.frequency_hz = int(frequency_hz)
        self._echo: deque[tuple[int, int, int]] = deque(maxlen=window)  # (server ns, round trip, offset)
        self._transmit: deque[int] = deque(maxlen=window * 8)
        self._fit: tuple[int, int, float, float, int] | None = None  # ref server ns, ref offset, slope, intercept, rtt

    def ticks_to_ns(self, ticks: int) -> int:
        """Motive ticks as nanoseconds of Motive's clock (exact integer math)."""
        return int(ticks) * 1_000_000_000 // self.frequency_hz

    def add_echo(self, sent_host_ns: int, server_ticks: int, received_host_ns: int) -> None:
        """Records one echo round trip. Replies that arrive before they were sent are ignored."""
        rtt = int(received_host_ns) - int(sent_host_ns)
        if rtt < 0:
            return
        server_ns = self.ticks_to_ns(server_ticks)
        offset = (int(sent_host_ns) + int(received_host_ns)) // 2 - server_ns
        self._echo.append((server_ns, rtt, offset))
        self._fit = self._fit_drift()

    def _fit_drift(self) -> tuple[int, int, float, float, int] | None:
        """Line through the clean echoes' offsets, when they span long enough."""
        best_rtt = min(rtt for _, rtt, _ in self._echo)
        clean = [(s, off) for s, rtt, off in self._echo if rtt <= 2 * best_rtt + CLEAN_RTT_MARGIN_NS]
        if len(clean) < FIT_MIN_SAMPLES or (clean[-1][0] - clean[0][0]) / 1e9 < FIT_MIN_SPAN_S:
            return None
        ref_s, ref_off = clean[-1]
        x = np.array([(c[0] - ref_s) / 1e9 for c in clean])
        y = np.array([float(c[1] - ref_off) for c in clean])
        slope, intercept = np.polyfit(x, y, 1)  # ns of offset per s of Motive time
        return ref_s, ref_off, float(slope), float(intercept), best_rtt

    def add_transmit(self, arrival_host_ns: int, transmit_ticks: int) -> None:
        """Records when a frame transmitted at ``transmit_ticks`` arrived on the host."""
        if transmit_ticks > 0:
            self._transmit.append(int(arrival_host_ns) - self.ticks_to_ns(transmit_ticks))

    @property
    def has_estimate(self) -> bool:
        return bool(self._echo or self._transmit)

    def offset(self, server_ns: int | None = None) -> ClockOffset:
        """The offset to apply at Motive time ``server_ns`` (default: the newest echo).

        Raises:
            ClockMappingError: no echo and no transmit sample yet.
        """
        if self._fit is not None:
            ref_s, ref_off, slope, intercept, best_rtt = self._fit
            at = ref_s if server_ns is None else int(server_ns)
            off = ref_off + int(round(intercept + slope * (at - ref_s) / 1e9))
            return ClockOffset(off, best_rtt // 2, "echo", drift_ppm=slope / 1e3)
        if self._echo:
            best_rtt, best_offset = min((rtt, off) for _, rtt, off in self._echo)
            return ClockOffset(best_offset, best_rtt // 2, "echo")
        if self._transmit:
            return ClockOffset(min(self._transmit), -1, "transmit")
        raise ClockMappingError("no clock samples yet (no echo reply, no frame with a transmit stamp)")

    def to_host_ns(self, server_ticks: int) -> int:
        """Host-clock time of a Motive tick count."""
        server_ns = self.ticks_to_ns(server_ticks)
        return server_ns + self.offset(server_ns).offset_ns
