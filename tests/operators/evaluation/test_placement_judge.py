"""The placement judge and the Wilson score interval (operators/evaluation/placement_judge.py)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings, strategies as st
from scipy.stats import binomtest

from teledora.operators.evaluation.placement_judge import (JudgeConfigError, JudgeTolerances, judge_placement,
                                                           tilt_rad, wilson_interval)

TOL = JudgeTolerances(xy_m=0.02, tilt_deg=10.0, rest_m=0.005, released_below_rad=0.1, rest_z_m=0.42)
UPRIGHT = (0.0, 0.0, 0.3826834, 0.9238795)  # 45 deg of yaw: still upright


def _about_x(deg: float) -> tuple[float, float, float, float]:
    h = math.radians(deg) / 2
    return (math.sin(h), 0.0, 0.0, math.cos(h))


def test_a_cube_set_down_upright_near_the_goal_and_let_go_succeeds() -> None:
    v = judge_placement((0.71, -1.46, 0.421), UPRIGHT, (0.70, -1.47), 0.01, TOL)
    assert v.success and v.reasons == ()
    assert v.xy_error_m == pytest.approx(math.hypot(0.01, 0.01)) and v.tilt_deg == pytest.approx(0.0, abs=1e-4)
    assert "success" in v.sentence()


@pytest.mark.parametrize("position, quat, gripper, reason", [
    ((0.73, -1.47, 0.42), UPRIGHT, 0.0, "from the goal"),          # 30 mm off
    ((0.70, -1.47, 0.42), _about_x(15.0), 0.0, "tilted"),           # leaning
    ((0.70, -1.47, 0.47), UPRIGHT, 0.0, "resting height"),          # in the air
    ((0.70, -1.47, 0.02), _about_x(0.0), 0.0, "resting height"),    # fell to the floor
    ((0.70, -1.47, 0.42), UPRIGHT, 0.35, "not let go"),             # gripper closed on it
    ((0.70, -1.47, 0.42), UPRIGHT, None, "unknown"),                # release unseen
])
def test_each_rule_fails_on_its_own(position, quat, gripper, reason) -> None:
    v = judge_placement(position, quat, (0.70, -1.47), gripper, TOL)
    assert not v.success and len(v.reasons) == 1 and reason in v.reasons[0], v.reasons


@settings(max_examples=200, deadline=None)
@given(dx=st.floats(-0.05, 0.05), dy=st.floats(-0.05, 0.05), dz=st.floats(-0.02, 0.02), tilt=st.floats(0.0, 40.0),
       gripper=st.floats(0.0, 0.7))
def test_success_is_exactly_every_rule_holding(dx, dy, dz, tilt, gripper) -> None:
    x, y, z = 0.6 + dx, -1.47 + dy, 0.42 + dz
    v = judge_placement((x, y, z), _about_x(tilt), (0.6, -1.47), gripper, TOL)
    rules = (math.dist((x, y), (0.6, -1.47)) <= TOL.xy_m, v.tilt_deg <= TOL.tilt_deg, abs(z - 0.42) <= TOL.rest_m,
             gripper < TOL.released_below_rad)
    assert v.success == all(rules)
    assert len(v.reasons) == rules.count(False)
    assert v.tilt_deg == pytest.approx(tilt, abs=1e-6)


def test_tilt_ignores_yaw_and_scale_and_refuses_a_zero_quaternion() -> None:
    assert tilt_rad((0.0, 0.0, 1.0, 0.0)) == pytest.approx(0.0)
    assert tilt_rad(tuple(2.0 * c for c in _about_x(30.0))) == pytest.approx(math.radians(30.0))
    with pytest.raises(ValueError):
        tilt_rad((0.0, 0.0, 0.0, 0.0))


def test_non_finite_positions_and_bad_tolerances_are_refused() -> None:
    with pytest.raises(ValueError):
        judge_placement((math.nan, 0.0, 0.42), UPRIGHT, (0.0, 0.0), 0.0, TOL)
    with pytest.raises(JudgeConfigError):
        JudgeTolerances(xy_m=0.0, tilt_deg=10.0, rest_m=0.005, released_below_rad=0.1, rest_z_m=0.42)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), trials=st.integers(1, 500))
def test_wilson_matches_scipy(data, trials) -> None:
    successes = data.draw(st.integers(0, trials))
    want = binomtest(successes, trials).proportion_ci(confidence_level=0.95, method="wilson")
    lo, hi = wilson_interval(successes, trials)
    assert (lo, hi) == pytest.approx((want.low, want.high), abs=1e-9)
    assert lo <= successes / trials <= hi


def test_wilson_known_values_and_refusals() -> None:
    # 10 of 10: the upper end is 1, the lower end n / (n + z^2)
    lo, hi = wilson_interval(10, 10)
    assert hi == 1.0 and lo == pytest.approx(10 / (10 + 1.959963984540054 ** 2))
    assert wilson_interval(5, 10) == pytest.approx((0.2366, 0.7634), abs=1e-4)
    for bad in ((1, 0), (-1, 3), (4, 3)):
        with pytest.raises(ValueError):
            wilson_interval(*bad)
