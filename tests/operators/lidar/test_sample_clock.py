import numpy as np
import pytest

from teledora.operators.lidar.sample_clock import SampleClock

LINE_BYTE_NS = 10e9 / 115200  # 86.8 us
DEVICE_BYTE_NS = 100_000.0  # an A1: 2000 samples of 5 bytes per second


def _reads(period_s: float, seconds: float, seed: int = 0, late_every: int = 0):
    """(stream position, read time) of a reader polling a device that streams at its own pace.

    Each read sees every byte that arrived by then; a read comes 0-2 ms after its
    tick (scheduling), and every ``late_every``-th one 40 % of a period late.
    """
    rng = np.random.default_rng(seed)
    t0 = 1_000_000_000_000
    out = []
    for k in range(1, int(seconds / period_s)):
        t = t0 + k * period_s * 1e9 + rng.uniform(0, 2e6)
        if late_every and k % late_every == 0:
            t += 0.4 * period_s * 1e9
        out.append((int((t - t0) / DEVICE_BYTE_NS), int(t)))
    return t0, out


@pytest.mark.parametrize("period_s", [0.02, 0.1])
def test_stamps_match_the_device_pace_where_the_line_rate_is_milliseconds_late(period_s):
    t0, reads = _reads(period_s, 3.0, late_every=7)
    clock = SampleClock(LINE_BYTE_NS, window_s=2.0)
    line_err, fit_err = [], []
    prev_pos = 0
    for pos, t in reads:
        clock.observe(pos, t)
        samples = np.arange(prev_pos + 5, pos + 1, 5)
        truth = t0 + samples * DEVICE_BYTE_NS
        if clock.byte_ns is not None:
            fit_err.append(np.mean(clock.stamp(samples) - truth))
            line_err.append(np.mean(t - (pos - samples) * LINE_BYTE_NS - truth))
        prev_pos = pos
    assert clock.byte_ns == pytest.approx(DEVICE_BYTE_NS, rel=0.01)
    # line-rate stamps are late by the 13.2 us/byte difference over half a read's bytes, plus lateness
    assert np.mean(line_err) > 0.5 * period_s * 1e9 * (1 - LINE_BYTE_NS / DEVICE_BYTE_NS)
    assert abs(np.mean(fit_err)) < 0.3e6  # within the reads' scheduling jitter (0-2 ms), lower envelope


def test_fallback_before_the_window_fills_and_reset():
    clock = SampleClock(LINE_BYTE_NS, window_s=2.0)
    clock.observe(1000, 5_000_000_000)
    assert clock.byte_ns is None
    assert clock.stamp([1000, 0]).tolist() == [5_000_000_000, int(5_000_000_000 - 1000 * LINE_BYTE_NS)]
    clock.reset()
    with pytest.raises(ValueError):
        clock.stamp([0])


def test_pace_never_below_the_line_rate_and_window_bounded():
    clock = SampleClock(LINE_BYTE_NS, window_s=0.5, max_points=50)
    for k in range(1, 400):  # a burst: bytes "faster than the line" (buffered data read at once)
        clock.observe(k * 1000, 1_000_000_000 + k * 10_000_000)
    assert clock.byte_ns == LINE_BYTE_NS
    assert len(clock._points) <= 50
