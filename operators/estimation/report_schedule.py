"""When a simulated sensor reports, on the robot's clock rather than the host's.

A real sensor reports on its own regular clock. Simulated, it reports on a
grid of the robot-time stamps of the samples it is fed: one report per
period, stamped with the grid time, made as soon as a sample at or past that
time shows the truth up to it. Deciding on the stamps (not on a host timer)
makes the reports the same however late the node runs or however unevenly
the samples come: a dora timer tick that arrives late is folded into the next
one and its report is lost; a grid time is not.
"""

from __future__ import annotations

from teledora.operators.errors import ConfigError

MAX_CATCH_UP_S = 1.0  # a gap in the samples longer than this restarts the grid instead of filling it


class ReportScheduleError(ConfigError):
    """The report period is unusable."""


class ReportSchedule:
    """The grid times a sensor reports at, given the stamps of its samples.

    The first sample starts the grid. Each later sample makes every grid time
    up to its stamp due, oldest first (after a gap in the samples several
    come due at once; each report then describes its own grid time). A gap
    longer than ``max_catch_up_ns`` restarts the grid at the sample instead,
    counted in ``restarts``: a sensor whose truth stopped for that long has
    nothing to report for it.

    Args:
        period_ns: Report period in the samples' stamp units (ns).
        max_catch_up_ns: Longest gap filled with reports.
    """

    def __init__(self, period_ns: int, max_catch_up_ns: int = round(MAX_CATCH_UP_S * 1e9)) -> None:
        if not period_ns > 0:
            raise ReportScheduleError(f"report period must be > 0 ns, got {period_ns}")
        if not max_catch_up_ns >= period_ns:
            raise ReportScheduleError(f"the longest gap filled ({max_catch_up_ns} ns) must be at least a period")
        self.period_ns = int(period_ns)
        self.max_catch_up_ns = int(max_catch_up_ns)
        self._next_ns: int | None = None
        self.restarts = 0

    def due(self, stamp_ns: int) -> list[int]:
        """The grid times (ns) the sample stamped ``stamp_ns`` makes due, oldest
        first; empty when it falls before the next one. Samples must not get
        older."""
        stamp_ns = int(stamp_ns)
        if self._next_ns is not None and stamp_ns - self._next_ns > self.max_catch_up_ns:
            self._next_ns = None
            self.restarts += 1
        if self._next_ns is None:
            self._next_ns = stamp_ns + self.period_ns
            return [stamp_ns]
        out = []
        while self._next_ns <= stamp_ns:
            out.append(self._next_ns)
            self._next_ns += self.period_ns
        return out
