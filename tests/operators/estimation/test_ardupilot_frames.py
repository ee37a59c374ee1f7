"""NED/FRD <-> odom/FLU conversion and EKF3 status flags."""

from __future__ import annotations

import math

import numpy as np
import pytest

from teledora.operators.estimation.ardupilot_frames import PoseCovariance, ned_from_odom, odom_from_ned, position_ok


def test_north_east_to_odom():
    # 1 m north, 2 m east, facing east (yaw_ned +90 deg) -> odom y negative, yaw -90 deg
    o = odom_from_ned(1.0, 2.0, 0.0, 0.5, math.pi / 2, 0.3)
    assert (o["x"], o["y"]) == (1.0, -2.0)
    assert o["yaw"] == pytest.approx(-math.pi / 2)
    # moving east while facing east is moving forward
    assert o["vx"] == pytest.approx(0.5) and o["vy"] == pytest.approx(0.0, abs=1e-12)
    assert o["wz"] == -0.3  # clockwise (FRD +z) is negative about FLU +z


@pytest.mark.parametrize("pose", [(0.3, -1.2, 2.5, 0.1, -0.05, 0.4), (0.0, 0.0, -3.0, 0.0, 0.2, -1.0)])
def test_round_trip(pose):
    n = ned_from_odom(*pose)
    o = odom_from_ned(n["north"], n["east"], n["vn"], n["ve"], n["yaw_ned"], n["yaw_rate_frd"])
    np.testing.assert_allclose([o[k] for k in ("x", "y", "yaw", "vx", "vy", "wz")], pose, atol=1e-12)


def test_position_ok_flags():
    assert position_ok(1 | 2 | 8)
    assert not position_ok(1 | 2)  # no relative horizontal position
    assert not position_ok(1 | 2 | 8 | 128)  # constant position mode
    cov = PoseCovariance(0.02, 0.01, 50.0)
    assert cov.matrix(True)[0, 0] == pytest.approx(4e-4)
    assert cov.matrix(False)[1, 1] == pytest.approx(2500.0)
