"""Watches that a streaming lidar keeps completing turns, and says why not.

Bytes arriving is not enough: a lidar whose motor froze still streams samples
(all at one angle, never a start flag), one whose motor browns out completes
turns too slow to keep, and a line full of noise yields no valid samples at
all. :class:`RevolutionWatchdog` is told when each turn is published and
reports a fault once none has been for ``timeout_s``, with the most likely
reason read from the stream's counters.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamCounters:
    """What the driver saw since the last completed turn (or the scan start).

    Attributes:
        bytes_read: Bytes received.
        samples: Samples accepted by the parser.
        rejected_windows: Phantom windows rejected (bit checks passed, angles did not).
        angle_span_deg: Degrees the head swept, summed over the accepted samples' clockwise steps.
        start_flags: Samples carrying the start flag.
        dropped_short: Turns dropped for too few samples.
        dropped_slow: Turns dropped for lasting too long.
        dropped_long: Turns dropped for too many samples.
        last_slow_scan_time_s: Duration of the last turn dropped as too slow.
        last_dropped_samples: Samples in the last turn dropped as too short or too long.
        overflows: Times the reader fell more than ``max_buffered_bytes`` behind
            (each one flushes the input and restarts the scan).
    """

    bytes_read: int
    samples: int
    rejected_windows: int
    angle_span_deg: float
    start_flags: int
    dropped_short: int
    dropped_slow: int
    dropped_long: int
    last_slow_scan_time_s: float
    last_dropped_samples: int
    overflows: int


@dataclass(frozen=True)
class WatchdogLimits:
    """Attributes:
    timeout_s: Longest time without a completed turn.
    min_scan_rate_hz: Slowest turn rate kept.
    min_samples: Fewest samples a kept turn has.
    """

    timeout_s: float
    min_scan_rate_hz: float
    min_samples: int


def diagnose(counters: StreamCounters, limits: WatchdogLimits, elapsed_s: float) -> str:
    """The reason no turn completed in ``elapsed_s``, in words a person can act on."""
    c = counters
    head = f"no complete turn for {elapsed_s:.1f} s (revolution_timeout_s {limits.timeout_s}): "
    if c.overflows:
        return head + (f"the reader fell behind {c.overflows} times (more than max_buffered_bytes waiting; "
                       "each flushes the input and restarts the scan): host overloaded or ticks too slow")
    if c.bytes_read == 0:
        return head + "no bytes arrived"
    if c.samples == 0:
        return head + (f"{c.bytes_read} bytes arrived but none decoded as a sample "
                       f"({c.rejected_windows} phantom windows rejected): line noise or wrong baud rate")
    if c.angle_span_deg < 10.0:
        return head + (f"motor not turning: {c.samples} samples with angles within {c.angle_span_deg:.1f} deg "
                       f"and {c.start_flags} start flags")
    swept_hz = c.angle_span_deg / 360.0 / elapsed_s if elapsed_s > 0 else 0.0
    if c.dropped_slow or swept_hz < limits.min_scan_rate_hz:
        if c.dropped_slow and c.last_slow_scan_time_s > 0:
            seen = (f"{c.dropped_slow} turns dropped, the last took {c.last_slow_scan_time_s:.2f} s "
                    f"({1.0 / c.last_slow_scan_time_s:.2f} Hz")
        else:
            seen = f"the head swept {c.angle_span_deg:.0f} deg in {elapsed_s:.1f} s ({swept_hz:.2f} Hz"
        return head + f"motor too slow: {seen}, below min_scan_rate_hz {limits.min_scan_rate_hz}); motor power?"
    if c.dropped_long:
        return head + (f"motor not completing turns: {c.dropped_long} turns dropped past {c.last_dropped_samples - 1} "
                       f"samples ({c.samples} samples, {c.start_flags} start flags)")
    if c.dropped_short:
        return head + (f"turns too short: {c.dropped_short} dropped, the last with {c.last_dropped_samples} samples "
                       f"(min_samples_per_revolution {limits.min_samples})")
    if c.start_flags == 0:
        return head + f"no start flag in {c.samples} samples spanning {c.angle_span_deg:.0f} deg"
    return head + f"{c.samples} samples, {c.start_flags} start flags, {c.rejected_windows} phantom windows rejected"


class RevolutionWatchdog:
    """Fires when no turn has completed for ``limits.timeout_s``.

    Args:
        limits: Timeout and the limits a kept turn meets (for the message).
    """

    def __init__(self, limits: WatchdogLimits) -> None:
        if not limits.timeout_s > 0:
            raise ValueError("timeout_s must be > 0")
        if limits.timeout_s <= 1.0 / limits.min_scan_rate_hz:
            raise ValueError(
                f"revolution timeout {limits.timeout_s} s must exceed the slowest kept turn "
                f"(1 / min_scan_rate_hz = {1.0 / limits.min_scan_rate_hz:.2f} s)"
            )
        self.limits = limits
        self.fired = 0
        self._since_ns: int | None = None

    def arm(self, now_ns: int) -> None:
        """Starts the timeout (scan started, or a turn was published)."""
        self._since_ns = now_ns

    def overdue_s(self, now_ns: int) -> float | None:
        """Seconds without a turn when past the timeout, else None."""
        if self._since_ns is None:
            return None
        elapsed = (now_ns - self._since_ns) * 1e-9
        if elapsed <= self.limits.timeout_s:
            return None
        self.fired += 1
        return elapsed
