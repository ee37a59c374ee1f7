"""Arm command limits: joint positions into their ranges, feedforward to its cap."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from teledora import models
from teledora.operators.drive.arm_command_limits import ArmCommandLimits, model_joint_ranges
from teledora.operators.drive.command_limits import CommandLimitsError, CommandRejected
from teledora.operators.drive.servo_calibration import ServoCalibration, joint_range_rad, joint_raw_from_rad

PROFILE = models.load_profile()
MODEL = mujoco.MjModel.from_xml_path(str(models.path(PROFILE.model)))
NAMES = list(PROFILE.arm_joint_names)
LIMITS = PROFILE.command_limits
RANGES = {"a": (-1.0, 2.0), "b": (0.0, 0.7)}


def small() -> ArmCommandLimits:
    return ArmCommandLimits(RANGES, 3.0, 10.0, 6.283)


def _ranges_in_the_mjcf_text() -> dict[str, tuple[float, float]]:
    """Each arm joint's range read from the XML itself: its own ``range`` or its default class's."""
    root = ET.parse(models.path(PROFILE.model)).getroot()
    defaults = {d.get("class"): d.find("joint") for d in root.iter("default") if d.get("class")}
    out = {}
    for j in root.iter("joint"):
        if j.get("name") in NAMES:
            text = j.get("range") or defaults[j.get("class")].get("range")
            lo, hi = (float(v) for v in text.split())
            out[j.get("name")] = (lo, hi)
    return out


def test_ranges_are_the_models_joint_ranges() -> None:
    lim = ArmCommandLimits.from_model(MODEL, PROFILE)
    assert lim.ranges == _ranges_in_the_mjcf_text()
    assert lim.ranges["left_elbow_flex"] == (-3.14, 3.14) and lim.ranges["right_gripper"] == (0.0, 0.7)
    assert (lim.max_speed_rad_s, lim.reject_factor, lim.reject_margin_rad) == (
        LIMITS.arm_max_speed_rad_s, LIMITS.reject_factor, LIMITS.joint_reject_margin_rad)


def test_a_joint_without_a_range_cannot_be_bounded() -> None:
    model = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint name="free_spin" type="hinge" limited="false"/>'
        '<geom size="0.1"/></body></worldbody></mujoco>')
    with pytest.raises(CommandLimitsError, match="free_spin.*no range"):
        model_joint_ranges(model, ["free_spin"])
    with pytest.raises(CommandLimitsError, match="not in the model"):
        model_joint_ranges(model, ["elbow"])


values = st.floats(min_value=-8.0, max_value=9.0)
speeds = st.floats(min_value=-30.0, max_value=30.0)


@given(values, values, speeds, speeds)
def test_positions_and_feedforward_match_a_plain_clip(qa: float, qb: float, va: float, vb: float) -> None:
    lo = np.array([RANGES["a"][0], RANGES["b"][0]])
    hi = np.array([RANGES["a"][1], RANGES["b"][1]])
    q, dq = np.array([qa, qb]), np.array([va, vb])
    assume(np.all(q >= lo - 6.283) and np.all(q <= hi + 6.283))
    lim = small()
    out = lim.bound(["a", "b"], q, dq)
    q_out, dq_out = out.value
    np.testing.assert_array_equal(q_out, np.clip(q, lo, hi))
    np.testing.assert_array_equal(dq_out, np.clip(dq, -3.0, 3.0))
    expected = {f"{n} q_ref" for n, v, l, h in zip("ab", q, lo, hi) if not l <= v <= h}
    expected |= {f"{n} dq_ref" for n, v in zip("ab", dq) if abs(v) > 3.0}
    assert {c.quantity for c in out.clamps} == expected
    assert lim.clamped == int(bool(expected)) and lim.rejected == 0
    assert np.array_equal(q, [qa, qb])  # the caller's arrays are not touched


@given(st.floats(allow_nan=True, allow_infinity=True), st.floats(allow_nan=True, allow_infinity=True))
def test_non_finite_or_absurd_values_reject_the_whole_command(q: float, dq: float) -> None:
    absurd_q = not math.isfinite(q) or q < -1.0 - 6.283 or q > 2.0 + 6.283
    absurd_dq = not math.isfinite(dq) or abs(dq) > 30.0
    assume(absurd_q or absurd_dq)
    lim = small()
    with pytest.raises(CommandRejected):
        lim.bound(["b", "a"], [0.1, q], [0.0, dq])
    assert (lim.rejected, lim.clamped) == (1, 0)


def test_the_issue_case_1e300_rad_is_rejected() -> None:
    lim = ArmCommandLimits.from_model(MODEL, PROFILE)
    q = np.zeros(len(NAMES))
    q[NAMES.index("left_wrist_flex")] = 1e300
    with pytest.raises(CommandRejected, match="left_wrist_flex q_ref 1e\\+300 rad is absurd"):
        lim.bound(NAMES, q, np.zeros(len(NAMES)))


def test_unknown_joints_and_mismatched_lengths_are_rejected() -> None:
    with pytest.raises(CommandRejected, match="'tail' has no limits"):
        small().bound(["a", "tail"], [0.0, 0.0], [0.0, 0.0])
    with pytest.raises(CommandRejected, match="must match"):
        small().bound(["a", "b"], [0.0], [0.0, 0.0])


def test_narrowing_to_a_calibrated_range() -> None:
    """A servo calibrated over raw 1000..3000 spans about ±88° around its mid: the
    model's ±3.14 rad is cut to that, and the cut goal maps back inside the raw range."""
    cal = ServoCalibration(id=3, drive_mode=0, homing_offset=0, range_min=1000, range_max=3000)
    lo, hi = joint_range_rad(cal)
    assert (lo, hi) == pytest.approx((-math.radians(1000 * 360 / 4095), math.radians(1000 * 360 / 4095)))
    lim = ArmCommandLimits.from_model(MODEL, PROFILE).narrowed({"left_elbow_flex": (lo, hi)})
    assert lim.ranges["left_elbow_flex"] == (lo, hi) and lim.ranges["right_elbow_flex"] == (-3.14, 3.14)
    q, _ = lim.bound(["left_elbow_flex"], [3.0], [0.0]).value
    assert joint_raw_from_rad(cal, float(q[0])) == 3000
    flipped = ServoCalibration(id=3, drive_mode=1, homing_offset=0, range_min=1000, range_max=3000)
    assert joint_range_rad(flipped) == pytest.approx((lo, hi))


def test_narrowing_refuses_unknown_joints_and_disjoint_ranges() -> None:
    with pytest.raises(CommandLimitsError, match="no range to narrow"):
        small().narrowed({"c": (0.0, 1.0)})
    with pytest.raises(CommandLimitsError, match="do not overlap"):
        small().narrowed({"b": (1.0, 2.0)})
