"""ROS LaserScan semantics of merged scans: truthful timing and either sign of angle_increment."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.contract.messages import MessageError, decode, encode
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.scan_merger import LidarMount, ScanMerger
from tests.operators.lidar.scan_cases import BASE_FRAME, FRONT, SyntheticRoom, odom_history, synthetic_scan

ROOM = SyntheticRoom(x_min=-3.0, x_max=2.5, y_min=-2.0, y_max=3.0)
CENTRE = {"a": LidarMount(0.0, 0.0, 0.0, 0.0)}


def test_time_increment_is_zero_only_when_every_ray_was_moved_to_the_stamp():
    scan = synthetic_scan(ROOM, FRONT, 1.0, w=1.0)
    odom = odom_history(2.0, 0.0, 1.0)
    moved = ScanMerger(BASE_FRAME, {"front": FRONT}).merge({"front": scan}, odom)
    assert moved.compensation == "per_ray" and moved.scan.time_increment == 0.0 and moved.timing_residual_s == 0.0
    for mode in ("none", "scan_stamp"):
        res = ScanMerger(BASE_FRAME, {"front": FRONT}, compensation=mode).merge({"front": scan}, odom)
        out = res.scan
        # the rays were not moved in time: LaserScan's own timing must say when each was measured
        assert out.time_increment == pytest.approx(scan.time_increment, rel=0.02)
        # the lidar sits 0.17 m ahead of the base centre, so near walls bend the
        # angle-to-time map a little: a few rays' worth, 2 % of the turn at most
        assert res.timing_residual_s < 0.02 * scan.scan_time
        if mode == "none":
            filled = res.source >= 0
            assert np.abs(out.ray_stamps_ns()[filled] - res.ray_stamps_ns[filled]).max() < 0.02 * scan.scan_time * 1e9


def test_without_odometry_the_timing_is_reported_not_zeroed():
    scan = synthetic_scan(ROOM, FRONT, 1.0)
    res = ScanMerger(BASE_FRAME, {"front": FRONT}).merge({"front": scan}, None)
    assert res.compensation == "none" and res.scan.time_increment != 0.0
    assert res.scan.time_span_ns()[0] == pytest.approx(scan.time_span_ns()[0], abs=2e6)


def _scan(ranges, angle_min, inc):
    ranges = np.asarray(ranges, dtype=float)
    return LaserScan(1_000_000_000, "l", angle_min, angle_min + (len(ranges) - 1) * inc, inc, 1e-4, 0.1, 0.15, 12.0,
                     ranges, np.ones(len(ranges)))


def test_the_contract_accepts_a_negative_angle_increment_and_rejects_zero():
    n = 360
    inc = 2 * math.pi / n
    down = _scan(np.linspace(1.0, 3.0, n), math.pi - inc, -inc)  # ROS-valid: angle_min > angle_max
    back = LaserScan.from_message(decode("LaserScan", encode("LaserScan", down.to_message())))
    assert back.angle_increment == pytest.approx(-inc)
    bad = down.to_message()
    bad["angle_increment"] = 0.0
    with pytest.raises(MessageError, match="angle_increment"):
        encode("LaserScan", bad)


def test_a_reversed_scan_merges_exactly_like_the_same_scan_forward():
    n = 360
    inc = 2 * math.pi / n
    rng = np.random.default_rng(3)
    ranges = 2.0 + rng.random(n)
    up = _scan(ranges, -math.pi + 0.3 * inc, inc)
    down = _scan(ranges[::-1], up.angle_max, -inc)
    a = ScanMerger(BASE_FRAME, CENTRE, compensation="none").merge({"a": up}).scan
    b = ScanMerger(BASE_FRAME, CENTRE, compensation="none").merge({"a": down}).scan
    np.testing.assert_allclose(a.ranges, b.ranges, rtol=1e-6)


@settings(max_examples=150, deadline=None)
@given(
    ranges=st.lists(st.one_of(st.floats(0.2, 10.0), st.just(float("nan")), st.just(float("inf")), st.just(float("-inf"))),
                    min_size=2, max_size=400),
    reverse=st.booleans(),
    mount=st.tuples(st.floats(-0.3, 0.3), st.floats(-0.3, 0.3), st.floats(-math.pi, math.pi)),
)
def test_merged_ranges_stay_between_the_nearest_and_farthest_return(ranges, reverse, mount):
    """Whatever the scan, the merger never invents a return nearer than a chord allows
    or farther than the farthest return, and never crashes."""
    n = len(ranges)
    inc = 2 * math.pi / max(n, 4)
    if reverse:
        scan = _scan(ranges, math.pi - inc, -inc)
    else:
        scan = _scan(ranges, -math.pi, inc)
    m = ScanMerger(BASE_FRAME, {"a": LidarMount(mount[0], mount[1], 0.0, mount[2])}, compensation="none")
    out = m.merge({"a": scan}).scan
    out.check_geometry()
    r = out.ranges[np.isfinite(out.ranges)].astype(float)
    valid = np.asarray(ranges, dtype=float)
    valid = valid[np.isfinite(valid)]
    if r.size:
        reach = math.hypot(mount[0], mount[1])
        assert valid.size > 0
        assert r.max() <= valid.max() + reach + 1e-4
        assert r.min() >= (valid.min() - reach) * math.cos(m.max_gap_rad / 2) - 1e-4
