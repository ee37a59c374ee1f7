"""Motive clock → host clock mapping."""

from __future__ import annotations

import pytest

from teledora.operators.mocap.natnet_clock import ClockMappingError, MotiveClockMapper

FREQ = 10_000_000  # 10 MHz: 100 ns per tick
OFFSET_NS = 1_700_000_000_000_000_000  # host epoch minus Motive's clock start


def ticks(server_ns: int) -> int:
    return server_ns * FREQ // 1_000_000_000


def test_echo_with_symmetric_path_is_exact():
    m = MotiveClockMapper(FREQ)
    server_ns = 5_000_000_000
    sent = OFFSET_NS + server_ns - 300_000  # 0.3 ms each way
    m.add_echo(sent, ticks(server_ns), OFFSET_NS + server_ns + 300_000)
    off = m.offset()
    assert (off.offset_ns, off.uncertainty_ns, off.source) == (OFFSET_NS, 300_000, "echo")
    assert m.to_host_ns(ticks(6_000_000_000)) == OFFSET_NS + 6_000_000_000


def test_smallest_round_trip_wins():
    m = MotiveClockMapper(FREQ)
    s = 1_000_000_000
    # a delayed reply (4 ms on the way back) and a clean one (0.1 ms each way)
    m.add_echo(OFFSET_NS + s - 100_000, ticks(s), OFFSET_NS + s + 4_000_000)
    m.add_echo(OFFSET_NS + 2 * s - 100_000, ticks(2 * s), OFFSET_NS + 2 * s + 100_000)
    assert m.offset().offset_ns == OFFSET_NS
    m.add_echo(10, ticks(s), 5)  # reply before request: ignored
    assert m.offset().offset_ns == OFFSET_NS


def test_transmit_fallback_takes_lower_envelope():
    m = MotiveClockMapper(FREQ)
    assert not m.has_estimate
    with pytest.raises(ClockMappingError):
        m.offset()
    for i, delay in enumerate([900_000, 200_000, 1_500_000]):
        tx = (i + 1) * 8_333_300
        m.add_transmit(OFFSET_NS + tx + delay, ticks(tx))
    off = m.offset()
    assert off.source == "transmit"
    assert off.offset_ns == OFFSET_NS + 200_000


def test_window_forgets_old_echoes():
    m = MotiveClockMapper(FREQ, window=2)
    m.add_echo(OFFSET_NS, 0, OFFSET_NS + 10)  # old clock, tiny round trip
    m.add_echo(OFFSET_NS + 1_000, 0, OFFSET_NS + 1_000 + 1_000_000)
    m.add_echo(OFFSET_NS + 2_000, 0, OFFSET_NS + 2_000 + 1_000_000)
    assert m.offset().uncertainty_ns == 500_000


def test_bad_parameters():
    with pytest.raises(ClockMappingError):
        MotiveClockMapper(0)
    with pytest.raises(ClockMappingError):
        MotiveClockMapper(FREQ, window=0)


def test_clock_drift_is_fitted_from_clean_echoes():
    """Motive's clock runs 100 ppm slow: host = server + OFFSET + 1e-4 * server."""
    m = MotiveClockMapper(FREQ)
    drift = 1e-4

    def host(server_ns: int) -> int:
        return OFFSET_NS + server_ns + round(drift * server_ns)

    for k in range(32):
        s = k * 1_000_000_000
        rtt = 5_000_000 if k % 7 == 3 else 200_000  # a few delayed replies are left out of the fit
        sent = host(s) - 100_000
        m.add_echo(sent, ticks(s), sent + rtt)
    later = 33_500_000_000
    assert abs(m.to_host_ns(ticks(later)) - host(later)) <= 2
    assert m.offset().drift_ppm == pytest.approx(100.0, rel=1e-6)
    constant = MotiveClockMapper(FREQ, window=1)  # no fit possible: one echo, 31 s old
    constant.add_echo(host(0) - 100_000, 0, host(0) + 100_000)
    assert constant.to_host_ns(ticks(later)) - host(later) == -round(drift * later)


def test_short_span_uses_best_echo_not_a_fit():
    m = MotiveClockMapper(FREQ)
    for k in range(10):  # 10 echoes over 0.9 s: too short to fit a drift
        s = k * 100_000_000
        m.add_echo(OFFSET_NS + s - 100_000 - k * 1000, ticks(s), OFFSET_NS + s + 100_000 - k * 1000)
    off = m.offset()
    assert off.drift_ppm == 0.0 and off.source == "echo"
