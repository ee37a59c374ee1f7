import math

import pytest

from teledora import models
from teledora.operators.drive.servo_calibration import (
    CalibrationError,
    RangeRecorder,
    ServoCalibration,
    calibration_from_dict,
    calibration_to_dict,
    gripper_rad_from_raw,
    gripper_raw_from_rad,
    half_turn_homing_offset,
    joint_rad_from_raw,
    joint_raw_from_rad,
    joint_velocity_rad_s,
)


def test_lerobot_degree_convention_and_round_trip():
    cal = ServoCalibration(1, 0, 0, 1000, 3000)  # mid 2000
    assert joint_rad_from_raw(cal, 2000) == 0.0
    assert math.degrees(joint_rad_from_raw(cal, 2000 + 4095 / 4)) == pytest.approx(90.0)
    for q in (-1.0, -0.3, 0.0, 0.25, 0.9):
        assert joint_rad_from_raw(cal, joint_raw_from_rad(cal, q)) == pytest.approx(q, abs=2 * math.pi / 4095)


def test_drive_mode_inverts_and_range_clamps():
    cal = ServoCalibration(2, 1, 0, 1500, 2500)
    assert joint_rad_from_raw(cal, 2100) < 0
    assert joint_raw_from_rad(cal, -0.2) > 2000
    assert joint_raw_from_rad(cal, 10.0) == 1500 and joint_raw_from_rad(cal, -10.0) == 2500
    assert joint_raw_from_rad(cal, 1e308) == 1500  # degrees overflow to inf, still clamped
    assert joint_velocity_rad_s(cal, 4096) == pytest.approx(-2 * math.pi)
    with pytest.raises(CalibrationError):
        joint_raw_from_rad(cal, math.nan)


def test_gripper_maps_range_onto_closure():
    cal = ServoCalibration(7, 0, 0, 2048, 3072)
    assert gripper_rad_from_raw(cal, 3072, 0.7, +1) == 0.0  # raw max = open
    assert gripper_rad_from_raw(cal, 2048, 0.7, +1) == pytest.approx(0.7)
    assert gripper_raw_from_rad(cal, 0.35, 0.7, +1) == 2560
    assert gripper_raw_from_rad(cal, 0.0, 0.7, -1) == 2048  # reversed mounting
    assert gripper_raw_from_rad(cal, 5.0, 0.7, +1) == 2048  # clamped closed


def test_half_turn_offset_and_range_recorder():
    assert half_turn_homing_offset(3000) == 953
    rec = RangeRecorder(["a", "b"])
    for pos in (2000, 2500, 1200):
        rec.update({"a": pos, "b": 2000})
    with pytest.raises(CalibrationError, match="b: moved less"):
        rec.ranges()
    rec.update({"b": 2600})
    assert rec.ranges() == {"a": (1200, 2500), "b": (2000, 2600)}


def test_shipped_nominal_calibration_and_round_trip():
    cals = calibration_from_dict(models.load_yaml("alohamini2/calibration.yaml"))
    assert len(cals) == 14 and cals["right_gripper"].id == 7
    again = calibration_from_dict(calibration_to_dict(cals, "x"))
    assert again == cals


def test_malformed_records_are_rejected():
    with pytest.raises(CalibrationError, match="missing"):
        calibration_from_dict({"servos": {"j": {"id": 1}}})
    with pytest.raises(CalibrationError):
        ServoCalibration(1, 0, 0, 3000, 2000)
    with pytest.raises(CalibrationError):
        ServoCalibration(1, 0, 4000, 0, 4095)
