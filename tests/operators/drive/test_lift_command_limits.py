"""Lift command limits: a velocity bounded to the profile's lift speed cap."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from teledora import models
from teledora.operators.drive.command_limits import CommandRejected
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.lift_axis import LiftAxis
from teledora.operators.drive.lift_command_limits import LiftCommandLimits

PROFILE = models.load_profile()
CAP, K = PROFILE.lift.max_speed_m_s, PROFILE.command_limits.reject_factor


def test_cap_comes_from_the_profile() -> None:
    assert LiftCommandLimits.from_profile(PROFILE).max_speed_m_s == 0.08


@given(st.floats(min_value=-K * CAP, max_value=K * CAP))
def test_velocity_is_clipped_to_the_cap(v: float) -> None:
    lim = LiftCommandLimits.from_profile(PROFILE)
    out = lim.bound(v)
    assert out.value == min(CAP, max(-CAP, v))
    assert bool(out.clamps) == (abs(v) > CAP) == bool(lim.clamped)
    if out.clamps:
        assert (out.clamps[0].requested, out.clamps[0].applied) == (v, out.value)


@given(st.floats(allow_nan=True, allow_infinity=True))
def test_non_finite_or_absurd_velocity_is_rejected(v: float) -> None:
    assume(not math.isfinite(v) or abs(v) > K * CAP)
    lim = LiftCommandLimits.from_profile(PROFILE)
    with pytest.raises(CommandRejected):
        lim.bound(v)
    assert lim.counts()["rejected"] == 1


def test_the_axis_still_applies_the_servo_speed_clamp_after_the_cap() -> None:
    """0.08 m/s (the profile cap) is more than the driver's 1300 ticks/s (41.6 mm/s):
    the command limit is the outer bound, the servo clamp the inner one."""
    cfg = load_drive_config().lift
    axis = LiftAxis(cfg, 0)
    axis.set_zero(0)
    axis.update(-4096 * 100 // 131)  # about 100 mm up (dir_sign -1)
    v = LiftCommandLimits.from_profile(PROFILE).bound(0.5).value
    assert v == CAP and abs(axis.velocity_goal_raw(v)) == cfg.max_ticks_s
