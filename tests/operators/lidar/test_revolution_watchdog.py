import pytest

from teledora.operators.lidar.revolution_watchdog import RevolutionWatchdog, StreamCounters, WatchdogLimits, diagnose

LIMITS = WatchdogLimits(timeout_s=2.0, min_scan_rate_hz=2.0, min_samples=50)


def _counters(**kw):
    base = dict(bytes_read=20000, samples=4000, rejected_windows=0, angle_span_deg=0.0, start_flags=0,
                dropped_short=0, dropped_slow=0, dropped_long=0, last_slow_scan_time_s=0.0, last_dropped_samples=0,
                overflows=0)
    return StreamCounters(**{**base, **kw})


def test_fires_only_past_the_timeout_and_once_per_arming():
    wd = RevolutionWatchdog(LIMITS)
    assert wd.overdue_s(10**12) is None  # not armed
    wd.arm(0)
    assert wd.overdue_s(1_999_000_000) is None
    assert wd.overdue_s(2_500_000_000) == pytest.approx(2.5) and wd.fired == 1


def test_a_timeout_shorter_than_the_slowest_turn_is_refused():
    with pytest.raises(ValueError, match="slowest kept turn"):
        RevolutionWatchdog(WatchdogLimits(timeout_s=0.4, min_scan_rate_hz=2.0, min_samples=50))


@pytest.mark.parametrize("counters, words", [
    (_counters(bytes_read=0, samples=0), "no bytes arrived"),
    (_counters(overflows=7), "the reader fell behind 7 times"),
    (_counters(samples=0, rejected_windows=900), "none decoded as a sample (900 phantom"),
    (_counters(dropped_slow=2, last_slow_scan_time_s=1.25, start_flags=2, angle_span_deg=720), "motor too slow: 2 turns dropped, the last took 1.25 s (0.80 Hz"),
    (_counters(angle_span_deg=0.0), "motor not turning: 4000 samples with angles within 0.0 deg"),
    (_counters(angle_span_deg=576.0, start_flags=1), "motor too slow: the head swept 576 deg in 2.0 s (0.80 Hz"),
    (_counters(dropped_long=1, last_dropped_samples=2001, start_flags=2, angle_span_deg=3000), "not completing turns"),
    (_counters(dropped_short=3, last_dropped_samples=12, start_flags=3, angle_span_deg=3000), "turns too short: 3 dropped"),
])
def test_the_reason_is_read_from_the_counters(counters, words):
    assert words in diagnose(counters, LIMITS, 2.0)
