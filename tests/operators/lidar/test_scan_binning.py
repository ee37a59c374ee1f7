from dataclasses import replace

import numpy as np
import pytest

from teledora.operators.lidar.laser_scan import LaserScan
from teledora.models.config_files import load_lidar_setup
from teledora.operators.lidar.scan_binning import Revolution, RevolutionError, bin_revolution

GRID = load_lidar_setup().grid  # 360 one-degree bins, 0.15-12 m


def _rev(angle_deg, dist_m, start_ns=1_000_000_000, scan_time_s=0.2):
    angle_deg = np.asarray(angle_deg, dtype=float)
    return Revolution(angle_deg, np.asarray(dist_m, dtype=float), np.full(angle_deg.shape, 30.0), start_ns, scan_time_s)


def test_clockwise_degrees_become_counter_clockwise_radians():
    grid = GRID
    # returns at 90 deg clockwise (the lidar's right) and 270 deg (its left)
    scan = bin_revolution(_rev([90.5, 270.5], [1.0, 2.0]), grid, "lidar_front")
    angles = scan.angles()
    right = np.flatnonzero(scan.ranges == np.float32(1.0))
    left = np.flatnonzero(scan.ranges == np.float32(2.0))
    assert len(right) == len(left) == 1
    assert np.sin(angles[right[0]]) == pytest.approx(-1.0, abs=1e-4)  # y < 0: right of FLU
    assert np.sin(angles[left[0]]) == pytest.approx(1.0, abs=1e-4)
    assert np.cos(angles[right[0]]) == pytest.approx(0.0, abs=0.01)


def test_grid_fields_are_consistent_and_contract_friendly():
    grid = GRID
    scan = bin_revolution(_rev(np.arange(360) + 0.5, np.full(360, 3.0)), grid, "f")
    scan.check_geometry()
    assert len(scan) == 360 and scan.angle_increment > 0
    assert scan.angle_max - scan.angle_min == pytest.approx(359 * scan.angle_increment)
    assert np.all(scan.ranges == np.float32(3.0))


def test_per_ray_time_runs_backwards_from_the_newest_ray():
    grid = replace(GRID, bins=4)
    rev = _rev([10.0, 100.0, 190.0, 280.0], [1.0, 2.0, 3.0, 4.0], start_ns=0, scan_time_s=0.4)
    scan = bin_revolution(rev, grid, "f")
    # sector k sweeps [k*90, (k+1)*90) deg during [0.1k, 0.1(k+1)) s; its ray is 3-k
    assert scan.time_increment == pytest.approx(-0.1)
    assert scan.stamp_ns == 350_000_000  # centre of the last sector swept
    times = scan.ray_stamps_ns()
    by_range = dict(zip(scan.ranges.tolist(), times.tolist()))
    assert by_range[1.0] == 50_000_000 and by_range[4.0] == 350_000_000


def test_nearest_of_several_samples_in_a_sector_wins_and_carries_its_quality():
    rev = Revolution(np.array([0.1, 0.4, 0.7]), np.array([2.0, 1.5, 3.0]), np.array([10.0, 20.0, 30.0]), 0, 0.2)
    scan = bin_revolution(rev, GRID, "f")
    i = np.flatnonzero(np.isfinite(scan.ranges))
    assert scan.ranges[i].tolist() == [1.5] and scan.intensities[i].tolist() == [20.0]


def test_rep117_values():
    grid = replace(GRID, bins=8)
    # sector 0: no measurement (0); sector 1: too close; sector 2: too far; sector 3: valid;
    # sectors 4-7: no sample at all
    rev = _rev([1.0, 46.0, 91.0, 136.0], [0.0, 0.05, 15.0, 2.0])
    scan = bin_revolution(rev, grid, "f")
    by_sector = scan.ranges[::-1]  # ray i is sector bins-1-i
    assert np.isposinf(by_sector[0]) and np.isneginf(by_sector[1]) and np.isposinf(by_sector[2])
    assert by_sector[3] == np.float32(2.0)
    assert np.all(np.isnan(by_sector[4:]))


def test_angle_just_below_360_and_unsorted_angles_stay_in_range():
    grid = GRID
    rev = _rev([359.999, 0.0, 180.2, 720.5, -0.5], [1.0, 2.0, 3.0, 4.0, 5.0])
    scan = bin_revolution(rev, grid, "f")  # would raise IndexError with an off-by-one bin
    # sectors: 359 (359.999 and -0.5), 0 (0.0 and 720.5), 180 (180.2)
    assert np.count_nonzero(np.isfinite(scan.ranges)) == 3
    assert scan.ranges[0] == np.float32(1.0)  # ray 0 = sector 359 keeps the nearer of 1.0 / 5.0
    assert scan.ranges[359] == np.float32(2.0)  # ray 359 = sector 0 keeps 2.0 over 4.0
    assert scan.ranges[179] == np.float32(3.0)


def test_all_invalid_and_empty_revolutions():
    grid = replace(GRID, bins=10)
    assert np.all(np.isposinf(bin_revolution(_rev(np.arange(10) * 36.0, np.zeros(10)), grid, "f").ranges))
    assert np.all(np.isnan(bin_revolution(_rev([], []), grid, "f").ranges))


def test_bad_revolutions_are_refused():
    with pytest.raises(RevolutionError):
        bin_revolution(_rev([1.0], [1.0], scan_time_s=0.0), GRID, "f")
    with pytest.raises(RevolutionError):
        bin_revolution(Revolution(np.zeros(2), np.zeros(3), np.zeros(2), 0, 0.1), GRID, "f")
    with pytest.raises(ValueError):
        replace(GRID, bins=1)


def test_scan_round_trips_through_the_message_contract():
    from teledora.operators.contract.messages import decode, encode

    scan = bin_revolution(_rev([10.0, 200.0], [1.0, 0.0]), replace(GRID, bins=90), "lidar_back")
    back = LaserScan.from_message(decode("LaserScan", encode("LaserScan", scan.to_message())))
    np.testing.assert_array_equal(back.ranges, scan.ranges)
    assert back.time_increment == scan.time_increment and back.frame_id == "lidar_back"
