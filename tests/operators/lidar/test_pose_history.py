import numpy as np
import pytest

from teledora.operators.geometry import Pose2D
from teledora.operators.lidar.pose_history import OdometrySample, PoseHistory, PoseOutOfRangeError


def test_interpolates_position_and_yaw_across_the_pi_wrap():
    h = PoseHistory()
    h.add(OdometrySample(0, Pose2D(0.0, 0.0, np.pi - 0.1)))
    h.add(OdometrySample(100_000_000, Pose2D(1.0, 2.0, -np.pi + 0.1)))
    x, y, yaw = h.interpolate([50_000_000])
    assert x[0] == pytest.approx(0.5) and y[0] == pytest.approx(1.0)
    assert np.cos(yaw[0]) == pytest.approx(-1.0)  # through pi, not through 0


def test_extrapolates_with_the_body_twist_within_the_margin_only():
    h = PoseHistory(max_extrapolation_s=0.2)
    h.add(OdometrySample(0, Pose2D(0.0, 0.0, np.pi / 2), vx=1.0, wz=0.5))
    x, y, yaw = h.interpolate([100_000_000])
    assert x[0] == pytest.approx(0.0, abs=1e-9) and y[0] == pytest.approx(0.1)  # forward = +y when facing +y
    assert yaw[0] == pytest.approx(np.pi / 2 + 0.05)
    with pytest.raises(PoseOutOfRangeError, match="odometry covers"):
        h.interpolate([300_000_000])


def test_empty_history_and_out_of_order_samples():
    h = PoseHistory()
    with pytest.raises(PoseOutOfRangeError, match="no odometry"):
        h.interpolate([0])
    assert h.add(OdometrySample(10, Pose2D(0, 0, 0)))
    assert not h.add(OdometrySample(5, Pose2D(0, 0, 0)))
    assert h.out_of_order == 1 and len(h) == 1


def test_old_poses_are_forgotten():
    h = PoseHistory(max_age_s=1.0)
    for k in range(30):
        h.add(OdometrySample(k * 100_000_000, Pose2D(float(k), 0.0, 0.0)))
    assert len(h) == 11
    assert not h.covers(0)
