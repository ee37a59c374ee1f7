"""The merged scan against geometry computed independently of the merger.

Ground truth is the analytic room (walls and pillar) ray-cast from the base
centre at the merged stamp; the lidars' scans are cast from each lidar at
each ray's own time while the base turns.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from teledora.operators.lidar.footprint import Footprint
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.scan_merger import LidarMount, ScanMerger
from teledora.operators.lidar.scan_pairing import ScanPairer
from tests.operators.lidar.scan_cases import BACK, BASE_FRAME, FRONT, SyntheticRoom, base_pose, odom_history, synthetic_scan

ROOM = SyntheticRoom(x_min=-3.0, x_max=2.5, y_min=-2.0, y_max=3.0, pillar_x=1.2, pillar_y=0.9, pillar_radius=0.2)
MOUNTS = {"front": FRONT, "back": BACK}
FOOTPRINT = Footprint([[0.23 * math.cos(a), 0.23 * math.sin(a)] for a in np.arange(12) * math.pi / 6], 0.02)


def truth(scan: LaserScan, w: float) -> np.ndarray:
    """Ranges from the base centre at the scan's stamp, by analytic ray casting."""
    x, y, yaw = base_pose(scan.stamp_ns * 1e-9, 0.0, w)
    ROOM.lidar_x, ROOM.lidar_y = x, y
    return np.array([ROOM.distance(yaw + a) for a in scan.angles()])


def from_minus_pi(scan: LaserScan, values: np.ndarray) -> np.ndarray:
    """Per-ray values re-indexed so that index 0 is the direction -pi (an uncompensated
    merge starts its grid at a lidar's seam)."""
    start = int(round((scan.angle_min + math.pi) / scan.angle_increment))
    return np.roll(values, start)


def blocked_forward(scan: LaserScan) -> LaserScan:
    """The back lidar's view forward ends on the robot's tower (0.2 m away), as on the robot."""
    r = scan.ranges.copy()
    r[np.cos(scan.angles()) < -0.35] = 0.2  # back lidar yaw is pi: -x in its frame is forward
    scan.ranges = r.astype(np.float32)
    return scan


def merged_sequence(w: float, front_rays: int = 360, back_rays: int = 360, seconds: float = 1.3,
                    block: bool = False, **merger_kw) -> list:
    """Merges a front (5.5 Hz) and a back (10 Hz) lidar while the base turns at ``w``, as the node pairs them."""
    odom = odom_history(seconds + 0.5, 0.0, w)
    events = []
    for name, rate, rays in (("front", 5.5, front_rays), ("back", 10.0, back_rays)):
        mount = MOUNTS[name]
        t = 0.3
        while t < seconds:
            s = synthetic_scan(ROOM, mount, t, rays=rays, scan_time_s=1 / rate, w=w)
            if block and name == "back":
                s = blocked_forward(s)
            events.append((s.stamp_ns, name, s))
            t += 1 / rate
    events.sort(key=lambda e: e[0])
    merger = ScanMerger(BASE_FRAME, MOUNTS, FOOTPRINT, **merger_kw)
    pairer = ScanPairer(("front", "back"), 0.1, 0.5)
    out = []
    for stamp, name, scan in events:
        for group in pairer.offer(name, scan, stamp):
            out.append(merger.merge(group.scans, odom))
    return out


@pytest.mark.parametrize("w", [-2.0, 0.0, 2.0])
def test_p95_range_error_at_360_rays_is_below_2cm_while_turning(w):
    results = merged_sequence(w)
    errors = []
    for res in results[1:]:
        t = truth(res.scan, w)
        ok = np.isfinite(res.scan.ranges) & np.isfinite(t)
        errors.append(np.abs(res.scan.ranges[ok] - t[ok]))
    e = np.concatenate(errors)
    assert np.percentile(e, 95) < 0.02
    assert np.median(e) < 0.002


def test_a_4x_coarser_lidar_is_upsampled_to_the_finer_grid():
    # front 1440 rays, back 360: each back ray must fill four output directions
    res = merged_sequence(0.0, front_rays=1440, back_rays=360, seconds=0.7)[-1]
    assert len(res.scan) == 1440
    empty = np.mean(np.isnan(res.scan.ranges))
    assert empty < 0.02
    t = truth(res.scan, 0.0)
    ok = np.isfinite(res.scan.ranges)
    assert np.percentile(np.abs(res.scan.ranges[ok] - t[ok]), 95) < 0.02


def test_a_depth_discontinuity_is_not_bridged():
    # a coarse lidar (4 degrees) sees a near wall at 1 m, then a far one at 3 m
    coarse = LaserScan(0, "l", -math.pi, -math.pi + 89 * math.radians(4), math.radians(4), 0.0, 0.1, 0.15, 12.0,
                       np.where(np.arange(90) < 45, 1.0, 3.0), np.ones(90))
    fine_but_empty = LaserScan(0, "l", -math.pi, math.pi - math.radians(1), math.radians(1), 0.0, 0.1, 0.15, 12.0,
                               np.full(360, np.nan), np.zeros(360))
    m = ScanMerger(BASE_FRAME, {"c": LidarMount(0, 0, 0, 0), "f": LidarMount(0, 0, 0, 0)}, compensation="none")
    out = m.merge({"c": coarse, "f": fine_but_empty}).scan
    r = from_minus_pi(out, out.ranges)
    assert len(r) == 360 and not np.any(np.isnan(r))
    # every direction is on the near wall or on the far one, never in between
    near, far = np.abs(r - 1.0) < 0.01, np.abs(r - 3.0) < 0.01
    assert np.all(near | far)
    # the step sits halfway between the last near ray and the first far one
    step = np.nonzero(np.diff(near.astype(int)) != 0)[0]
    angles = -math.pi + np.arange(360) * math.radians(1)
    edges = [angles[i] + math.radians(0.5) for i in step]
    expected = [-math.pi + 44.5 * math.radians(4), -math.pi + 89.5 * math.radians(4)]
    assert sorted(edges) == pytest.approx(sorted(expected), abs=math.radians(1))


def test_no_gap_wider_than_the_gap_limit_is_bridged():
    ranges = np.full(90, 2.0)
    ranges[10:13] = np.nan  # 16 degrees without any measurement
    coarse = LaserScan(0, "l", -math.pi, -math.pi + 89 * math.radians(4), math.radians(4), 0.0, 0.1, 0.15, 12.0,
                       ranges, np.ones(90))
    m = ScanMerger(BASE_FRAME, {"c": LidarMount(0, 0, 0, 0)}, compensation="none", max_gap_rad=math.radians(5))
    out = m.merge({"c": coarse}).scan
    hole = (out.angles() > coarse.angles()[9] + math.radians(2.01)) & (out.angles() < coarse.angles()[13] - math.radians(2.01))
    assert hole.sum() > 0 and np.all(np.isnan(out.ranges[hole]))


@pytest.mark.parametrize("w", [-2.0, 2.0])
def test_no_blind_wedge_while_turning(w):
    # forward only the front lidar sees (the tower blocks the back one); its seam faces
    # forward, and while turning each of its turns leaves a wedge there unseen
    results = merged_sequence(w, block=True, seconds=1.5)
    assert len(results) >= 5
    for res in results[1:]:
        nan = np.isnan(res.scan.ranges)
        # a single direction may stay empty at a depth edge the two sides' sectors do not
        # reach; a wedge (two or more adjacent directions) may not
        assert not np.any(nan & np.roll(nan, 1)), f"unseen around {np.degrees(res.scan.angles()[nan]).round(0)}"
        assert nan.mean() < 0.01
    if w > 0:  # turning against the spin: each turn covers less than 360 degrees
        assert max(res.from_history for res in results) > 0


def test_newest_data_wins_over_the_previous_scan():
    # the previous scan saw an obstacle that has gone: where the new scans look, the obstacle is gone
    m = ScanMerger(BASE_FRAME, {"a": LidarMount(0, 0, 0, 0)}, compensation="scan_stamp", history_max_age_s=1.0)
    odom = odom_history(1.0)
    old = LaserScan(100_000_000, "l", -math.pi, math.pi - math.radians(1), math.radians(1), 0.0, 0.1, 0.15, 12.0,
                    np.full(360, 0.5), np.ones(360))
    m.merge({"a": old}, odom)
    ranges = np.full(360, 3.0)
    ranges[:90] = np.nan  # a quarter not seen this time
    new = LaserScan(200_000_000, "l", -math.pi, math.pi - math.radians(1), math.radians(1), 0.0, 0.1, 0.15, 12.0,
                    ranges, np.ones(360))
    res = m.merge({"a": new}, odom)
    r, stamps = from_minus_pi(res.scan, res.scan.ranges), from_minus_pi(res.scan, res.ray_stamps_ns)
    assert np.all(r[95:] == np.float32(3.0))
    assert np.all(r[:85] == np.float32(0.5))  # the quarter not seen now keeps the older data ...
    assert np.all(stamps[:85] == 100_000_000) and np.all(stamps[95:] == 200_000_000)  # ... stamped as such
