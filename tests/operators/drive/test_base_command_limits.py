"""Base command limits: twists bounded to the profile's caps, absurd ones rejected."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from teledora import models
from teledora.operators.drive.base_command_limits import BaseCommandLimits
from teledora.operators.drive.command_limits import CommandLimitsError, CommandRejected
from teledora.operators.drive.omni_drive import BodyTwist

PROFILE = models.load_profile()
V, W, K = PROFILE.base.max_linear_m_s, PROFILE.base.max_yaw_rad_s, PROFILE.command_limits.reject_factor

speeds = st.floats(min_value=-K * V, max_value=K * V, allow_nan=False)
yaws = st.floats(min_value=-K * W, max_value=K * W, allow_nan=False)
anything = st.floats(allow_nan=True, allow_infinity=True)


def limits() -> BaseCommandLimits:
    return BaseCommandLimits.from_profile(PROFILE)


def test_caps_come_from_the_profile() -> None:
    lim = limits()
    assert (lim.max_linear_m_s, lim.max_yaw_rad_s, lim.reject_factor) == (0.25, 0.65, 10.0)


@given(speeds, speeds, yaws)
def test_within_caps_is_untouched_and_over_caps_lands_on_them(f: float, l: float, w: float) -> None:
    assume(math.hypot(f, l) <= K * V)
    lim = limits()
    out = lim.bound(BodyTwist(f, l, w))
    speed_in, speed_out = math.hypot(f, l), math.hypot(out.value.forward_m_s, out.value.left_m_s)
    if speed_in <= V:
        assert (out.value.forward_m_s, out.value.left_m_s) == (f, l)
    else:
        assert speed_out == pytest.approx(V, rel=1e-12)
        # the direction is kept: same heading as asked
        assert math.atan2(out.value.left_m_s, out.value.forward_m_s) == pytest.approx(math.atan2(l, f), abs=1e-12)
    assert out.value.yaw_rad_s == float(np.clip(w, -W, W))
    clamped = {c.quantity for c in out.clamps}
    assert clamped == {q for q, over in (("linear speed", speed_in > V), ("yaw_rad_s", abs(w) > W)) if over}
    assert (lim.clamped, lim.rejected) == (int(bool(clamped)), 0)


@given(anything, anything, anything)
def test_non_finite_or_absurd_twists_are_rejected_and_counted(f: float, l: float, w: float) -> None:
    finite = all(math.isfinite(v) for v in (f, l, w))
    absurd = finite and (math.hypot(f, l) > K * V or abs(w) > K * W)
    assume(not finite or absurd)
    lim = limits()
    with pytest.raises(CommandRejected):
        lim.bound(BodyTwist(f, l, w))
    assert (lim.rejected, lim.clamped) == (1, 0)


def test_the_issue_case_1e300_is_rejected_not_driven() -> None:
    lim = limits()
    with pytest.raises(CommandRejected, match="absurd"):
        lim.bound(BodyTwist(1e300, 0.0, 0.0))
    with pytest.raises(CommandRejected, match="not finite"):
        lim.bound(BodyTwist(0.0, float("nan"), 0.0))
    assert lim.counts() == {"rejected": 2, "clamped": 0, "clamped_by": {}}


@given(st.floats(min_value=-1.0, max_value=1.0), st.floats(min_value=-1.0, max_value=1.0), st.floats(min_value=-1.0, max_value=1.0))
def test_a_teleop_stick_at_its_cap_is_never_counted_as_clamped(lx: float, ly: float, rx: float) -> None:
    """teleop scales the stick onto the same norm cap; its rounding must not read as a clamp."""
    fwd, left = ly * V, -lx * V
    speed = float(np.hypot(fwd, left))
    if speed > V:
        fwd, left = fwd * V / speed, left * V / speed
    out = limits().bound(BodyTwist(fwd, left, rx * W))
    assert out.clamps == ()


def test_caps_that_bound_nothing_are_refused() -> None:
    with pytest.raises(CommandLimitsError, match="linear speed"):
        BaseCommandLimits(0.0, 0.65, 10.0)
    with pytest.raises(CommandLimitsError, match="reject_factor"):
        BaseCommandLimits(0.25, 0.65, 1.0)
