"""Drive parity: the quantized wheel commands must match the real driver bit for bit."""

from __future__ import annotations

import csv
import math
from dataclasses import replace
from pathlib import Path

import pytest

from teledora.operators.drive.omni_drive import (
    BodyTwist,
    DriveInputError,
    OmniDrive,
    WheelTicks,
    yaw_deg_s_to_rad_s,
)
from teledora.models.config_files import load_drive_config

GEOMETRY = load_drive_config().base.geometry
DRIVE = OmniDrive(GEOMETRY)
FIXTURES = Path(__file__).resolve().parents[2] / "data" / "drive_fixtures.csv"


def _rows() -> list[dict[str, str]]:
    with FIXTURES.open(newline="") as f:
        return list(csv.DictReader(f))


ROWS = _rows()


def test_fixture_table_covers_the_required_cases():
    kinds = {r["case"] for r in ROWS}
    assert len(ROWS) >= 300
    assert {"round", "inside_caps", "saturated", "tie"} <= kinds
    assert sum(int(r["tie"]) for r in ROWS) >= 20, "the table must pin half-to-even rounding ties"


@pytest.mark.parametrize("row", ROWS, ids=[f"{i}-{r['case']}" for i, r in enumerate(ROWS)])
def test_body_to_wheel_raw_matches_driver(row):
    yaw = yaw_deg_s_to_rad_s(float(row["theta_deg_s"]))
    assert yaw == float(row["yaw_rad_s"])
    got = DRIVE.body_to_wheel_raw(float(row["forward_m_s"]), float(row["left_m_s"]), yaw)
    assert got == WheelTicks(int(row["left"]), int(row["back"]), int(row["right"]))
    assert all(type(v) is int for v in got)


@pytest.mark.parametrize("row", ROWS, ids=[f"{i}-{r['case']}" for i, r in enumerate(ROWS)])
def test_wheel_raw_to_body_matches_driver(row):
    # The inverse is a 3x3 matrix-vector product, which numpy hands to BLAS: its
    # last bit depends on the CPU's kernel (the driver's own output differs between
    # an AVX-512 and an AVX2 machine), so it is held to 1e-15, not bit for bit.
    # The command direction above (body -> integer ticks) stays bit-exact.
    got = DRIVE.wheel_raw_to_body(int(row["left"]), int(row["back"]), int(row["right"]))
    want = BodyTwist(float(row["inv_forward_m_s"]), float(row["inv_left_m_s"]), float(row["inv_yaw_rad_s"]))
    assert got == pytest.approx(want, rel=0, abs=1e-15)
    assert got.yaw_rad_s * (180.0 / math.pi) == pytest.approx(float(row["inv_theta_deg_s"]), rel=0, abs=1e-13)


def test_reference_examples():
    assert DRIVE.body_to_wheel_raw(0.15, 0.0, 0.0) == (1344, 0, -1344)
    assert DRIVE.body_to_wheel_raw(0.0, 0.0, yaw_deg_s_to_rad_s(45.0)) == (1585, 1585, 1585)


def test_ties_round_half_to_even():
    for row in (r for r in ROWS if r["tie"] == "1"):
        ticks = DRIVE.body_to_wheel_raw(float(row["forward_m_s"]), float(row["left_m_s"]), float(row["yaw_rad_s"]))
        # at least one wheel landed on an exact .5 and must have been rounded to even
        assert any(v % 2 == 0 for v in ticks)


def test_saturation_scales_all_wheels_together():
    ticks = DRIVE.body_to_wheel_raw(1.0, 0.5, 2.0)
    assert max(abs(v) for v in ticks) == 3000
    unscaled = OmniDrive(replace(GEOMETRY, max_wheel_ticks_s=1e9)).body_to_wheel_raw(1.0, 0.5, 2.0)
    ratio = 3000 / max(abs(v) for v in unscaled)
    for a, b in zip(ticks, unscaled):
        assert abs(a - b * ratio) <= 1.0


def test_int16_clamp_when_saturation_is_disabled():
    drive = OmniDrive(replace(GEOMETRY, max_wheel_ticks_s=1e12))
    assert drive.body_to_wheel_raw(100.0, 0.0, 0.0) == (32767, 0, -32768)


def test_round_trip_recovers_twist_within_quantization():
    twist = (0.1, -0.07, 0.3)
    back = DRIVE.wheel_raw_to_body(*DRIVE.body_to_wheel_raw(*twist))
    # one tick/s of one wheel is ~0.1 mm/s of rim speed
    assert back.forward_m_s == pytest.approx(twist[0], abs=2e-4)
    assert back.left_m_s == pytest.approx(twist[1], abs=2e-4)
    assert back.yaw_rad_s == pytest.approx(twist[2], abs=2e-3)


def test_signs_follow_flu():
    forward = DRIVE.wheel_raw_to_body(*DRIVE.body_to_wheel_raw(0.1, 0.0, 0.0))
    left = DRIVE.wheel_raw_to_body(*DRIVE.body_to_wheel_raw(0.0, 0.1, 0.0))
    ccw = DRIVE.wheel_raw_to_body(*DRIVE.body_to_wheel_raw(0.0, 0.0, 0.5))
    assert forward.forward_m_s > 0.09 and abs(forward.left_m_s) < 1e-3
    assert left.left_m_s > 0.09 and abs(left.forward_m_s) < 1e-3
    assert ccw.yaw_rad_s > 0.49


@pytest.mark.parametrize("bad", [(math.nan, 0.0, 0.0), (0.0, math.inf, 0.0), (0.0, 0.0, -math.inf)])
def test_non_finite_twist_is_rejected(bad):
    with pytest.raises(DriveInputError, match="finite"):
        DRIVE.body_to_wheel_raw(*bad)


def test_overflowing_twist_is_rejected():
    with pytest.raises(DriveInputError, match="overflows"):
        DRIVE.body_to_wheel_raw(1e308, -1e308, 0.0)


def test_non_integer_ticks_are_rejected():
    with pytest.raises(DriveInputError, match="integer"):
        DRIVE.wheel_raw_to_body(1.5, 0, 0)  # type: ignore[arg-type]


def test_geometry_is_validated():
    with pytest.raises(ValueError):
        replace(GEOMETRY, wheel_radius_m=0.0)
