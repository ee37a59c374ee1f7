"""Command watchdog: declares a command stream dead when it stops arriving."""

from __future__ import annotations


class CommandWatchdog:
    """Tracks when the last valid command arrived.

    Args:
        timeout_s: Silence after which :meth:`expired` turns true (1.0 s for the
            AlohaMini base and lift, as the real host does).
    """

    def __init__(self, timeout_s: float = 1.0) -> None:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        self.timeout_ns = int(round(timeout_s * 1e9))
        self._last_ns: int | None = None
        self.trips = 0
        self._tripped = False

    def feed(self, now_ns: int, stamp_ns: int | None = None) -> None:
        """Records a valid command received at ``now_ns``, taken at ``stamp_ns``
        when given: a command counts from when it was sent, not from when it
        came out of a queue, so one that waited longer than the timeout keeps
        the axis stopped (a stamp of 0, "no time", counts from its arrival)."""
        self._last_ns = now_ns if not stamp_ns else min(now_ns, stamp_ns)
        self._tripped = False

    def expired(self, now_ns: int) -> bool:
        """True when no command arrived for longer than the timeout (or none ever).

        Counts each transition from alive to expired in :attr:`trips`."""
        dead = self._last_ns is None or now_ns - self._last_ns > self.timeout_ns
        if dead and self._last_ns is not None and not self._tripped:
            self._tripped = True
            self.trips += 1
        return dead
