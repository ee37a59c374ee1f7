"""When a simulated sensor reports, on the robot's clock rather than the host's.

A sensor fed samples stamped in robot time reports once every ``period_ns``
of those stamps. Deciding on the stamps (not on a host timer) makes the
reports the same however late the node runs: a timer tick that arrives late
is folded into the next one and its report is lost, a stamp is not.
"""

from __future__ import annotations

from teledora.operators.errors import ConfigError


class ReportScheduleError(ConfigError):
    """The report period is unusable."""


class ReportSchedule:
    """Picks the samples a sensor reports at.

    The first sample reports; after it, the first sample at or past the end of
    each period, less a quarter period for jitter (so samples that come one
    period apart all report). Each period ends at least one period after the
    report before it: a gap in the samples gives one report, not a burst of
    catch-up ones.

    Args:
        period_ns: Report period in the samples' stamp units (ns).
    """

    def __init__(self, period_ns: int) -> None:
        if not period_ns > 0:
            raise ReportScheduleError(f"report period must be > 0 ns, got {period_ns}")
        self.period_ns = int(period_ns)
        self._slack_ns = self.period_ns // 4
        self._next_ns: int | None = None

    def due(self, stamp_ns: int) -> bool:
        """Whether the sample stamped ``stamp_ns`` (not older than the last one) is reported."""
        if self._next_ns is not None and stamp_ns < self._next_ns - self._slack_ns:
            return False
        # the next period ends one period after this report at the earliest
        # (a late sample moves the grid, jitter does not)
        after = stamp_ns + self.period_ns
        self._next_ns = after if self._next_ns is None else max(self._next_ns + self.period_ns, after)
        return True
