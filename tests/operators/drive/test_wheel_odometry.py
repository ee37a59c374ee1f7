import math

import pytest

from teledora.operators.geometry import Pose2D, integrate_constant_twist
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.omni_drive import OmniDrive
from teledora.operators.drive.wheel_odometry import OdometryTimeError, WheelOdometry

DRIVE = OmniDrive(load_drive_config().base.geometry)


def test_integrates_held_twist_over_the_interval():
    odo = WheelOdometry(DRIVE)
    ticks = DRIVE.body_to_wheel_raw(0.2, 0.0, 0.0)
    odo.update(0, ticks)
    pose = odo.update(2_000_000_000, ticks)
    expected = DRIVE.wheel_raw_to_body(*ticks).forward_m_s * 2.0
    assert pose.x == pytest.approx(expected, rel=1e-12)
    assert abs(pose.y) < 1e-6


def test_zero_order_hold_uses_previous_twist():
    odo = WheelOdometry(DRIVE)
    odo.update(0, DRIVE.body_to_wheel_raw(0.0, 0.0, 0.0))
    pose = odo.update(1_000_000_000, DRIVE.body_to_wheel_raw(0.2, 0.0, 0.0))
    assert pose == Pose2D()  # the new command only acts from now on


def test_matches_direct_integration_of_recovered_twist():
    odo = WheelOdometry(DRIVE)
    ticks = DRIVE.body_to_wheel_raw(0.1, 0.05, 0.4)
    twist = DRIVE.wheel_raw_to_body(*ticks)
    ref = Pose2D()
    for k in range(50):
        odo.update(k * 10_000_000, ticks)
        if k:
            ref = integrate_constant_twist(ref, *twist, 0.01)
    assert math.isclose(odo.pose.x, ref.x, abs_tol=1e-12) and math.isclose(odo.pose.y, ref.y, abs_tol=1e-12)


def test_time_backwards_is_an_error():
    odo = WheelOdometry(DRIVE)
    odo.update(10, (0, 0, 0))
    with pytest.raises(OdometryTimeError):
        odo.update(5, (0, 0, 0))
