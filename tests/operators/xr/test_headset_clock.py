"""The headset clock mapping against simulated clocks whose true offset is known:
whatever the delays (asymmetric, jittered) and the drift within the stated
bound, the true host time of a sample is never earlier than the mapped one,
and never later by more than twice the uncertainty."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.xr.headset_clock import (
    DRIFT_PPM,
    HOST_CLOCK,
    MAX_ROUND_TRIP_NS,
    WINDOW_NS,
    ClockEstimate,
    HeadsetClock,
)

MS = 1_000_000


class SimulatedPage:
    """A page clock: ``page(h) = h - offset0 - drift * (h - h0)`` for host time ``h``."""

    def __init__(self, offset0_ns: int, drift_ppm: float, h0_ns: int) -> None:
        self.offset0, self.drift, self.h0 = offset0_ns, drift_ppm * 1e-6, h0_ns

    def page_ns(self, host_ns: int) -> int:
        # integers except the drift term: at 1.7e18 ns a float is only good to 256 ns
        return host_ns - self.offset0 - round(self.drift * (host_ns - self.h0))


trip = st.tuples(st.integers(0, 400 * MS), st.integers(0, 400 * MS), st.integers(100 * MS, 1000 * MS))


@settings(max_examples=300, deadline=None)
@given(
    offset0=st.integers(-(10**15), 10**15),
    drift=st.floats(-DRIFT_PPM, DRIFT_PPM),
    trips=st.lists(trip, min_size=1, max_size=25),
    sample_back=st.integers(0, 500 * MS),
    later=st.integers(0, 3000 * MS),
)
def test_mapped_time_is_the_earliest_the_sample_can_stand_for(offset0, drift, trips, sample_back, later):
    h = 1_700_000_000_000_000_000
    page = SimulatedPage(offset0, drift, h)
    clock = HeadsetClock()
    for down, up, gap in trips:  # ping at h, the page reads its clock after `down`, the pong takes `up`
        assert clock.add_round_trip(h, page.page_ns(h + down), h + down + up)
        h += down + up + gap
    now = h + later
    est = clock.estimate(now)
    assert est is not None
    true_sample_host = now - sample_back
    mapped = est.earliest_host_ns(page.page_ns(true_sample_host))
    assert mapped <= true_sample_host  # the age is never underestimated
    bound = est.uncertainty_at(true_sample_host)  # and overestimated by at most twice the bound there
    assert true_sample_host - mapped <= 2 * bound * (1 + 4 * DRIFT_PPM * 1e-6) + 4


def test_symmetric_link_delay_is_seen_whole():
    # 1 s each way: the offset is exact, the bound is the one-way delay, and a pose that
    # spent 1 s on the link arrives 2 s old by the conservative mapping (held by a 0.3 s rule)
    clock = HeadsetClock()
    offset = 5_000 * MS
    clock.add_round_trip(0, 1_000 * MS - offset, 2_000 * MS)
    est = clock.estimate(2_000 * MS)
    assert abs(est.offset_ns - offset) <= 1
    assert 1_000 * MS <= est.uncertainty_at(2_000 * MS) <= 1_000 * MS * (1 + 2 * DRIFT_PPM * 1e-6) + 5
    sampled_page = 10_000 * MS - offset  # sampled at host 10 s, arrives at host 11 s
    assert 11_000 * MS - est.earliest_host_ns(sampled_page) >= 2_000 * MS


def test_the_tightest_recent_round_trip_wins_and_old_ones_are_forgotten():
    clock = HeadsetClock()
    clock.add_round_trip(0, 0, 40 * MS)  # loose
    clock.add_round_trip(1_000 * MS, 1_000 * MS + 1 * MS, 1_002 * MS)  # tight: 2 ms
    clock.add_round_trip(2_000 * MS, 2_000 * MS, 2_030 * MS)  # loose
    est = clock.estimate(2_100 * MS)
    assert est.offset_ns == 0 and 1 * MS < est.uncertainty_at(2_100 * MS) < 2 * MS
    assert clock.estimate(1_002 * MS + WINDOW_NS + 1).uncertainty_ns >= 15 * MS  # the tight one left the window
    assert clock.estimate(2_030 * MS + WINDOW_NS + 1) is None  # nothing left: frames cannot be mapped


def test_the_bound_grows_with_the_age_of_the_round_trip():
    clock = HeadsetClock()
    clock.add_round_trip(0, 0, 2 * MS)
    est = clock.estimate(2 * MS)
    grown = est.uncertainty_at(1 * MS + 5_000 * MS) - est.uncertainty_at(1 * MS)
    assert abs(grown - DRIFT_PPM * 1e-6 * 5_000 * MS) <= 1


def test_impossible_round_trips_are_ignored():
    clock = HeadsetClock()
    assert not clock.add_round_trip(10, 0, 5)  # answered before asked
    assert not clock.add_round_trip(0, 0, MAX_ROUND_TRIP_NS + 1)
    assert clock.estimate(10) is None and clock.round_trips == 0


def test_host_clock_mapping_is_the_identity():
    assert HOST_CLOCK == ClockEstimate(0, 0) and HOST_CLOCK.earliest_host_ns(123) == 123
