"""TIMESYNC clock mapping: offset, fastest sample wins, rejection, reboot."""

from __future__ import annotations

import pytest

from teledora.operators.estimation.mavlink_clock import ClockNotSynced, MavlinkClock

HOST0 = 1_700_000_000_000_000_000
OFFSET = 12_345_678_901 - HOST0  # autopilot boot time minus host time


def _exchange(clock: MavlinkClock, sent: int, up_ns: int, down_ns: int) -> bool:
    """Simulates one exchange with the given one-way delays."""
    tc1 = sent + up_ns + OFFSET
    return clock.add_exchange(sent, tc1, sent + up_ns + down_ns)


def test_not_synced_until_first_reply():
    clock = MavlinkClock()
    assert not clock.synced
    with pytest.raises(ClockNotSynced):
        clock.to_host_ns(5)


def test_symmetric_delay_gives_exact_offset():
    clock = MavlinkClock()
    assert _exchange(clock, HOST0, 200_000, 200_000)
    assert clock.offset_ns == OFFSET
    assert clock.to_host_ns(HOST0 + OFFSET + 7) == HOST0 + 7
    assert clock.boot_ms_to_host_ns(1000) == 1_000_000_000 - OFFSET


def test_fastest_exchange_wins_and_error_bounded_by_half_rtt():
    clock = MavlinkClock()
    _exchange(clock, HOST0, 9_000_000, 1_000_000)  # asymmetric, slow: 4 ms error
    assert abs(clock.offset_ns - OFFSET) == 4_000_000
    _exchange(clock, HOST0 + 10**9, 30_000, 50_000)  # fast: 10 us error
    assert abs(clock.offset_ns - OFFSET) <= clock.round_trip_ns // 2
    assert abs(clock.offset_ns - OFFSET) == 10_000


def test_slow_or_impossible_exchanges_rejected():
    clock = MavlinkClock(max_round_trip_ns=10_000_000)
    assert not _exchange(clock, HOST0, 8_000_000, 8_000_000)
    assert not clock.add_exchange(HOST0, 5, HOST0 - 1)  # reply before request
    assert clock.rejected == 2 and not clock.synced


def test_reboot_starts_over():
    clock = MavlinkClock()
    _exchange(clock, HOST0, 10_000, 10_000)
    # the autopilot rebooted: its clock restarted near zero
    sent = HOST0 + 60 * 10**9
    assert clock.add_exchange(sent, 2_000_000_000, sent + 40_000)
    assert clock.resets == 1
    assert clock.to_host_ns(2_000_000_000) == sent + 20_000


def test_reset_forgets():
    clock = MavlinkClock()
    _exchange(clock, HOST0, 10_000, 10_000)
    clock.reset()
    assert not clock.synced
