"""The latched e-stop and its two-step release (pure; time is passed in).

Any stop input latches the stop at once, and nothing but the release clears it.
The release takes two deliberate steps: the first release edge *arms* it, a
second one within ``confirm_window_s`` *confirms* it. Each step is refused while
a stop input is still held (the caller says which are, and may add other reasons,
such as an unfocused page), and an armed release is cancelled by a new stop, by
the caller (a connection change, lost focus, a stop input pressed) or by the
window running out.

Events (through ``emit``): ``estop_latched:<why>``, ``estop_release_armed``,
``estop_released``, ``estop_release_refused:<reasons>``,
``estop_release_cancelled:<why>``, ``estop_release_expired``.
"""

from __future__ import annotations

from typing import Callable, Sequence


class EStopLatch:
    """A latched stop cleared only by an armed-then-confirmed release.

    Args:
        confirm_window_s: The confirmation must come at most this long after
            the arming step (> 0).
        emit: Called with the name of each event.
    """

    def __init__(self, confirm_window_s: float, emit: Callable[[str], None]) -> None:
        if not confirm_window_s > 0.0:
            raise ValueError(f"confirm_window_s must be > 0, got {confirm_window_s}")
        self._window_ns = int(round(confirm_window_s * 1e9))
        self._emit = emit
        self.latched = False
        self._armed_ns: int | None = None

    @property
    def armed(self) -> bool:
        """True between an accepted first release step and its confirmation or cancellation."""
        return self._armed_ns is not None

    def latch(self, why: str) -> None:
        """Latches the stop (again): any armed release is void."""
        if not self.latched:
            self.latched = True
            self._emit(f"estop_latched:{why}")
        self.cancel(why)

    def release_step(self, now_ns: int, refuse: Sequence[str]) -> bool:
        """One release edge at ``now_ns``; True when it released.

        ``refuse`` names what forbids a release step now (the stop inputs still
        held, and anything else the caller rules out); a refused step also
        voids an armed release."""
        self.expire(now_ns)
        if not self.latched:
            return False
        if refuse:
            self.cancel("+".join(refuse))
            self._emit(f"estop_release_refused:{'+'.join(refuse)}")
            return False
        if self._armed_ns is None:
            self._armed_ns = now_ns
            self._emit("estop_release_armed")
            return False
        self._armed_ns = None
        self.latched = False
        self._emit("estop_released")
        return True

    def cancel(self, why: str) -> None:
        """Voids an armed release (no-op when none is armed)."""
        if self._armed_ns is not None:
            self._armed_ns = None
            self._emit(f"estop_release_cancelled:{why}")

    def expire(self, now_ns: int) -> None:
        """Voids an armed release whose confirmation window ended before ``now_ns``."""
        if self._armed_ns is not None and now_ns - self._armed_ns > self._window_ns:
            self._armed_ns = None
            self._emit("estop_release_expired")
