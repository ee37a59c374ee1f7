"""A fixed latency on stamped samples: what a sensor reports now it measured ``delay`` ago.

Samples go in with the instant they describe; at host time ``t`` only those
stamped at or before ``t - delay`` have come out. This is how the simulated
flow sensor gets its report latency (ArduPilot's SITL has the same knob,
SIM_FLOW_DELAY, in ms), and what EK3_FLOW_DELAY on the autopilot compensates.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

from teledora.operators.errors import TeledoraError

T = TypeVar("T")


class DelayLineError(TeledoraError, ValueError):
    """An unusable delay or a sample older than one already queued."""


class DelayLine(Generic[T]):
    """FIFO of stamped samples released ``delay_ns`` after their stamp.

    Args:
        delay_ns: Latency (>= 0).
    """

    def __init__(self, delay_ns: int) -> None:
        if delay_ns < 0:
            raise DelayLineError(f"delay must be >= 0, got {delay_ns} ns")
        self.delay_ns = int(delay_ns)
        self._queue: deque[tuple[int, T]] = deque()
        self.latest: tuple[int, T] | None = None
        """The newest released sample (stamp, value), kept after release."""

    def push(self, stamp_ns: int, value: T) -> None:
        """Queues a sample describing instant ``stamp_ns``.

        Raises:
            DelayLineError: ``stamp_ns`` is older than the newest queued or released sample.
        """
        newest = self._queue[-1][0] if self._queue else (self.latest[0] if self.latest is not None else None)
        if newest is not None and stamp_ns < newest:
            raise DelayLineError(f"sample stamped {stamp_ns} ns is older than the newest one ({newest} ns)")
        self._queue.append((int(stamp_ns), value))

    def release(self, now_ns: int) -> list[tuple[int, T]]:
        """The samples that have come out by ``now_ns`` since the previous call, oldest first."""
        cutoff = now_ns - self.delay_ns
        out = []
        while self._queue and self._queue[0][0] <= cutoff:
            out.append(self._queue.popleft())
        if out:
            self.latest = out[-1]
        return out

    def has_output(self, now_ns: int) -> bool:
        """True when some sample has come out, or would by ``now_ns``."""
        return self.latest is not None or (bool(self._queue) and self._queue[0][0] <= now_ns - self.delay_ns)

    def following(self) -> tuple[int, T] | None:
        """The oldest sample still inside the delay (the one after ``latest``), if any."""
        return self._queue[0] if self._queue else None

    @property
    def pending(self) -> int:
        """Samples still inside the delay."""
        return len(self._queue)
