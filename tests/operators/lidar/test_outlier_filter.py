"""The plausibility filter for isolated range outliers."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.outlier_filter import OutlierFilter, OutlierFilterConfig, isolated_outliers

CFG = OutlierFilterConfig(range_tolerance_m=0.1, range_tolerance_fraction=0.05, neighbour_window_deg=3.0,
                          previous_window_deg=8.0, previous_max_age_s=0.5)
N = 360
INC = 2 * math.pi / N
R_MIN, R_MAX = 0.15, 12.0


def outliers(ranges, previous):
    return isolated_outliers(np.asarray(ranges, float), [] if previous is None else [np.asarray(previous, float)],
                             INC, R_MIN, R_MAX, CFG)


def tol(r: float) -> float:
    return CFG.range_tolerance_m + CFG.range_tolerance_fraction * r


def scan(ranges, stamp_ns: int = 1_000_000_000, frame_id: str = "lidar_front") -> LaserScan:
    ranges = np.asarray(ranges, dtype=np.float32)
    n = len(ranges)
    return LaserScan(stamp_ns, frame_id, -(n - 0.5) * 2 * math.pi / n, -0.5 * 2 * math.pi / n, 2 * math.pi / n,
                     -0.18 / n, 0.18, R_MIN, R_MAX, ranges, np.full(n, 47.0, dtype=np.float32))


# a ray of a scan: a return, "saw nothing", "too close" or "nothing measured"
ray = st.one_of(st.floats(R_MIN, R_MAX), st.just(math.inf), st.just(-math.inf), st.just(math.nan))
M = 40  # property tests: a 40-degree stretch of the 1-degree grid (not a whole turn)
scans = st.lists(ray, min_size=M, max_size=M)
returns = st.floats(R_MIN, R_MAX)


def wall(rng_seed: int) -> np.ndarray:
    """A smooth, noisy room-like profile: ranges 1-4 m varying slowly with the bearing."""
    rng = np.random.default_rng(rng_seed)
    a = np.arange(N) * INC
    return 2.5 + 1.2 * np.sin(a + rng.uniform(0, 6)) + rng.normal(0, 0.005, N)


@settings(max_examples=200, deadline=None)
@given(scans, scans, st.integers(0, M - 1), returns)
def test_never_rejects_a_ray_that_agrees_with_the_previous_turn_at_its_bearing(current, previous, i, x):
    current[i] = x
    previous[i] = x + 0.9 * tol(x) * (1 if i % 2 else -1)
    assert not outliers(current, previous)[i]


@settings(max_examples=200, deadline=None)
@given(scans, scans, st.integers(1, M - 2), returns, st.sampled_from([-1, 1]))
def test_never_rejects_a_ray_that_agrees_with_a_neighbour(current, previous, i, x, side):
    current[i] = x
    current[i + side] = x - 0.9 * tol(x)
    assert not outliers(current, previous)[i]


@settings(max_examples=200, deadline=None)
@given(scans, scans)
def test_only_returns_are_ever_rejected(current, previous):
    mask = outliers(current, previous)
    r = np.asarray(current)
    assert not np.any(mask & ~(np.isfinite(r) & (r >= R_MIN) & (r <= R_MAX)))


@settings(max_examples=30, deadline=None)
@given(st.lists(ray, min_size=N, max_size=N))
def test_the_first_turn_is_untouched(current):
    assert not outliers(current, None).any()
    f = OutlierFilter(CFG)
    res = f.apply(scan(current))
    assert res.rejected.size == 0 and not res.previous_used
    np.testing.assert_array_equal(res.scan.ranges, scan(current).ranges)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, N - 1), st.floats(1.05, 5.0), st.sampled_from([-1, 1]))
def test_always_rejects_an_isolated_spike_beyond_the_bound(seed, i, factor, sign):
    base = wall(seed)
    previous = wall(seed)  # the same room one turn earlier (new noise would be within the tolerance too)
    current = base.copy()
    # beyond the bound from every ray within the previous-turn window (the profile varies
    # by up to ~0.2 m across it)
    margin = factor * tol(base[i]) + 0.25
    spike = base[i] + sign * margin
    assume(R_MIN <= spike <= R_MAX)
    current[i] = spike
    mask = outliers(current, previous)
    assert mask[i] and mask.sum() == 1


def test_a_thin_pole_seen_turn_after_turn_passes_but_not_a_one_turn_blip():
    room = np.full(N, 3.0)
    pole = room.copy()
    pole[100] = 1.2  # one ray wide
    assert not outliers(pole, pole)[100]
    # the robot turned 5 degrees between the turns: the window still finds it
    assert not outliers(pole, np.roll(pole, 5))[100]
    assert outliers(pole, room)[100]  # not there a turn ago, not beside it: rejected this turn


def test_edges_corners_and_grazing_walls_are_not_spikes():
    r = np.full(N, 4.0)
    r[50:80] = 1.0  # a box in front of the wall: both edges agree with one side
    r[200:210] = np.linspace(2.0, 3.0, 10)  # a wall seen grazing: each ray between its neighbours
    r[299], r[300], r[301] = 1.95, 2.0, 1.93  # a room's corner: its apex a little farther than either side
    r[120], r[121] = 1.0, 1.05  # a post two rays wide
    assert not outliers(r, np.full(N, 4.0)).any()


def test_no_return_and_too_close_neighbours_stand_for_ranges_beyond_the_limits():
    open_space = np.full(N, math.inf)
    far = open_space.copy()
    far[10] = R_MAX - 0.2  # just inside range_max among rays that saw nothing: agrees with them
    assert not outliers(far, open_space)[10]
    blip = open_space.copy()
    blip[10] = 3.2  # a return in open space, none there a turn ago: rejected
    assert outliers(blip, open_space)[10]
    near = np.full(N, -math.inf)
    near[10] = R_MIN + 0.05
    assert not outliers(near, near.copy())[10]


def test_a_side_with_no_measured_neighbour_keeps_the_ray():
    r = np.full(N, 3.0)
    r[100] = 1.0
    r[97:100] = np.nan  # nothing measured within 3 degrees before it
    assert not outliers(r, np.full(N, 3.0))[100]
    r[97] = 3.0  # within the window again
    assert outliers(r, np.full(N, 3.0))[100]


def test_a_previous_turn_that_measured_nothing_near_the_bearing_cannot_refute():
    r = np.full(N, 3.0)
    r[100] = 1.0
    prev = np.full(N, 3.0)
    prev[92:109] = np.nan
    assert not outliers(r, prev)[100]


def test_first_and_last_rays_of_a_whole_turn_are_neighbours():
    r = np.full(N, 3.0)
    r[0] = 1.0
    assert outliers(r, np.full(N, 3.0))[0]


def test_filter_rejects_counts_and_remembers_the_scan_as_received():
    f = OutlierFilter(CFG)
    room = np.full(N, 3.0)
    assert f.apply(scan(room, 1_000_000_000)).rejected.size == 0
    spiked = room.copy()
    spiked[42] = 7.0
    res = f.apply(scan(spiked, 1_180_000_000))
    assert res.previous_used and res.rejected.tolist() == [42]
    assert res.reasons() == ["range outlier: ray 42 at 7.00 m, beyond both neighbours and unlike the previous "
                             "turn near its bearing"]
    assert math.isnan(res.scan.ranges[42]) and res.scan.intensities[42] == 0.0
    assert res.scan.ranges[41] == 3.0 and f.rays_rejected == 1 and f.scans == 2
    assert f.report() == (1, res.reasons()[0]) and f.report()[0] == 0  # per diagnostics period
    # the next turn sees 7.0 there again: the raw previous turn vouches for it
    assert f.apply(scan(spiked, 1_360_000_000)).rejected.size == 0


def test_an_old_previous_scan_another_grid_or_a_reset_tests_nothing():
    room = np.full(N, 3.0)
    spiked = room.copy()
    spiked[42] = 7.0
    f = OutlierFilter(CFG)
    f.apply(scan(room, 1_000_000_000))
    assert f.apply(scan(spiked, 1_600_000_000)).rejected.size == 0  # 0.6 s > previous_max_age_s
    f.apply(scan(room, 1_700_000_000))
    assert f.apply(scan(spiked[:180], 1_800_000_000)).rejected.size == 0  # another grid
    f.apply(scan(room, 1_900_000_000))
    f.reset()
    res = f.apply(scan(spiked, 2_000_000_000))
    assert res.rejected.size == 0 and not res.previous_used and f.scans_without_previous == 5


@pytest.mark.parametrize("bad", [dict(range_tolerance_m=0.0), dict(range_tolerance_fraction=-0.1),
                                 dict(neighbour_window_deg=0.0), dict(previous_window_deg=-1.0),
                                 dict(previous_max_age_s=0.0)])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        replace(CFG, **bad)


def test_a_thin_object_caught_only_every_other_turn_passes():
    """A leg narrower than the sample spacing is hit by some turns only: any turn of the
    last previous_max_age_s that saw it vouches for it."""
    room = np.full(N, 3.0)
    leg = room.copy()
    leg[200] = 1.4
    f = OutlierFilter(CFG)
    for k in range(12):
        res = f.apply(scan(leg if k % 2 == 0 else room, 1_000_000_000 + k * 100_000_000))
        assert res.rejected.size == 0, k
    # seen once, then again only after previous_max_age_s: nothing recent vouches
    g = OutlierFilter(CFG)
    g.apply(scan(leg, 1_000_000_000))
    for k in range(1, 6):
        g.apply(scan(room, 1_000_000_000 + k * 100_000_000))
    assert g.apply(scan(leg, 1_600_000_000)).rejected.tolist() == [200]
    assert len(g._previous) <= 6  # only the scans of the last 0.5 s are kept


def test_the_previous_turns_window_wraps_round_a_whole_turn():
    pole = np.full(N, 3.0)
    pole[2] = 1.2
    before = np.full(N, 3.0)
    before[357] = 1.2  # 5 degrees away across the seam
    assert not outliers(pole, before)[2]
    # on a stretch that is not a whole turn nothing wraps: the same bearings are 355 rays apart
    assert isolated_outliers(pole[:358], [before[:358]], INC, R_MIN, R_MAX, CFG)[2]
