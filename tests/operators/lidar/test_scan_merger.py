import math

import numpy as np
import pytest

from teledora.operators.lidar.footprint import Footprint
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.scan_merger import LidarMount, MergeError, ScanMerger
from tests.operators.lidar.scan_cases import (  # noqa: E402
    BACK,
    BASE_FRAME,
    FRONT,
    SyntheticRoom,
    base_pose,
    merged_points_world,
    odom_history,
    synthetic_scan,
    wall_error,
)

MOUNTS = {"front": FRONT, "back": BACK}


def _scan(ranges, angle_min=-math.pi, inc=None, stamp_ns=0, time_increment=0.0, range_max=12.0):
    ranges = np.asarray(ranges, dtype=float)
    inc = inc if inc is not None else 2 * math.pi / len(ranges)
    return LaserScan(stamp_ns, "l", angle_min, angle_min + (len(ranges) - 1) * inc, inc, time_increment, 0.1, 0.15,
                     range_max, ranges, np.ones(len(ranges)))


def test_square_room_static_matches_the_geometry_and_sees_the_pillar():
    room = SyntheticRoom(x_min=-2, x_max=2, y_min=-2, y_max=2, pillar_x=1.0, pillar_y=1.0, pillar_radius=0.2)
    front = synthetic_scan(room, FRONT, 1.0)
    back = synthetic_scan(room, BACK, 1.05)
    res = ScanMerger(BASE_FRAME, MOUNTS).merge({"front": front, "back": back}, odom_history(2.0))
    scan = res.scan
    assert scan.frame_id == BASE_FRAME and len(scan) == 360
    assert scan.stamp_ns == 1_025_000_000  # halfway between the two
    wx, wy = merged_points_world(scan, (0.0, 0.0, 0.0))
    assert len(wx) == 360  # every direction has a return
    err = wall_error(room, wx, wy)
    # between two returns on one wall the output ray meets the wall itself; the
    # largest errors are where the pillar's edge is placed halfway between two rays
    # (a depth discontinuity is never bridged) and at the room's corners (a chord)
    assert np.median(err) < 1e-4 and np.percentile(err, 95) < 0.005 and np.max(err) < 0.04
    # the pillar at 45 deg, 1.414 - 0.2 m away
    i = int(round((math.pi / 4 - scan.angle_min) / scan.angle_increment))
    assert scan.ranges[i] == pytest.approx(math.hypot(1, 1) - 0.2, abs=0.01)
    # both lidars contribute
    assert set(np.unique(res.source)) == {0, 1}


def test_finer_resolution_wins_and_angle_max_return_wraps_into_bin_zero():
    coarse = _scan(np.full(360, 5.0))
    fine = _scan(np.full(1440, 4.0))
    res = ScanMerger(BASE_FRAME, {"a": LidarMount(0, 0, 0, 0), "b": LidarMount(0, 0, 0, 0)}).merge({"a": coarse, "b": fine})
    assert len(res.scan) == 1440
    assert res.scan.angle_increment == pytest.approx(2 * math.pi / 1440)
    assert np.all(res.scan.ranges == np.float32(4.0))
    # a single return exactly at +pi (angle_max of a [-pi, pi] scan) lands in bin 0, not bin N
    edge = _scan([np.nan, 3.0], angle_min=0.0, inc=math.pi)
    res = ScanMerger(BASE_FRAME, {"a": LidarMount(0, 0, 0, 0)}).merge({"a": edge})
    assert res.scan.ranges[0] == np.float32(3.0)


def test_returns_on_the_robot_footprint_are_dropped():
    room = SyntheticRoom(x_min=-2, x_max=2, y_min=-2, y_max=2, pillar_x=10, pillar_y=10)
    front = synthetic_scan(room, FRONT, 1.0)
    # the front lidar also sees the back lidar's housing, 0.3 m straight behind it
    behind = int(np.argmin(np.abs(np.cos(front.angles()) + 1)))
    front.ranges[behind] = 0.3
    fp = Footprint.rectangle(-0.25, 0.25, -0.2, 0.2)
    res = ScanMerger(BASE_FRAME, {"front": FRONT}, footprint=fp).merge({"front": front})
    assert res.self_hits == {"front": 1}
    wx, wy = merged_points_world(res.scan, (0, 0, 0))
    assert np.all(~fp.contains(wx, wy))
    res_no_fp = ScanMerger(BASE_FRAME, {"front": FRONT}).merge({"front": front})
    assert np.nanmin(res_no_fp.scan.ranges) == pytest.approx(0.13, abs=0.01)


def test_returns_at_floor_height_are_kept():
    # a lidar mounted at z = 0: anchors with a default min height drop all of these
    res = ScanMerger(BASE_FRAME, {"a": LidarMount(0, 0, 0.0, 0)}).merge({"a": _scan(np.full(90, 2.0))})
    assert np.count_nonzero(np.isfinite(res.scan.ranges)) >= 90


def test_rep117_all_invalid_all_no_return_and_empty_scans():
    m = ScanMerger(BASE_FRAME, {"a": LidarMount(0, 0, 0, 0), "b": LidarMount(0, 0, 0, 0)})
    all_nan = m.merge({"a": _scan(np.full(360, np.nan))}).scan
    assert np.all(np.isnan(all_nan.ranges))
    all_inf = m.merge({"a": _scan(np.full(360, np.inf))}).scan
    assert np.all(np.isposinf(all_inf.ranges))
    empty = LaserScan(0, "l", 0.0, 0.0, 0.0, 0.0, 0.1, 0.15, 12.0, np.zeros(0))
    res = m.merge({"a": empty, "b": _scan(np.full(360, 2.0))})
    assert np.all(res.scan.ranges == np.float32(2.0))
    # -Inf (too close) and out-of-limit values are never reported as returns
    mixed = _scan(np.array([-np.inf, 0.05, 20.0, np.nan] * 90))
    out = m.merge({"a": mixed}).scan.ranges
    assert not np.any(np.isfinite(out)) and np.any(np.isposinf(out))


def test_descending_angle_order_gives_the_same_result():
    ranges = 2.0 + np.sin(np.arange(360) * 0.1)
    up = _scan(ranges)
    down = _scan(ranges[::-1], angle_min=up.angle_max, inc=-up.angle_increment)
    m = ScanMerger(BASE_FRAME, {"a": LidarMount(0.1, 0.05, 0.2, 0.3)})
    np.testing.assert_allclose(m.merge({"a": up}).scan.ranges, m.merge({"a": down}).scan.ranges, rtol=1e-6)


def test_unknown_lidar_and_empty_input_are_errors():
    with pytest.raises(MergeError, match="no mount"):
        ScanMerger(BASE_FRAME, MOUNTS).merge({"left": _scan(np.ones(10))})
    with pytest.raises(MergeError):
        ScanMerger(BASE_FRAME, MOUNTS).merge({})
    with pytest.raises(MergeError):
        ScanMerger(BASE_FRAME, MOUNTS, compensation="magic")


def test_without_odometry_the_merge_still_happens_and_says_why():
    res = ScanMerger(BASE_FRAME, MOUNTS).merge({"front": _scan(np.full(360, 2.0))}, None)
    assert res.compensation == "none" and "no odometry" in res.odom_error


@pytest.mark.parametrize("v,w", [(0.0, 0.65), (0.25, 0.0), (0.25, 0.65)])
def test_motion_compensation_keeps_walls_straight_while_driving(v, w):
    room = SyntheticRoom(x_min=-3, x_max=3, y_min=-2.5, y_max=2.5, pillar_x=1.5, pillar_y=-1.0)
    t_front, t_back = 1.0, 1.08  # 80 ms apart, as two free-running A1 do
    scans = {
        "front": synthetic_scan(room, FRONT, t_front, v=v, w=w),
        "back": synthetic_scan(room, BACK, t_back, v=v, w=w, rays=200, scan_time_s=0.1),
    }
    odom = odom_history(2.0, v=v, w=w)
    errors = {}
    for mode in ("per_ray", "scan_stamp", "none"):
        res = ScanMerger(BASE_FRAME, MOUNTS, compensation=mode).merge(scans, odom)
        assert res.compensation == mode
        pose = base_pose(res.scan.stamp_ns * 1e-9, v, w)
        wx, wy = merged_points_world(res.scan, pose)
        errors[mode] = float(np.percentile(wall_error(room, wx, wy), 95))
    assert errors["per_ray"] < 0.02
    assert errors["none"] > 2 * errors["per_ray"]
    if w:
        # turning: one transform per scan still smears each scan over its turn
        assert errors["scan_stamp"] > 2 * errors["per_ray"]
