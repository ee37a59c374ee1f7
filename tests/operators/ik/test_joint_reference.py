"""Joint reference guard: uniform speed scaling, acceleration cap, inward bounds, feedforward."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.ik.joint_reference import (
    JointReference,
    JointReferenceConfig,
    JointReferenceError,
    acceleration_scale,
    uniform_scale,
)

DT = 0.01


def _ref(speed: float = 1.5, accel: float = 1e6) -> JointReference:
    ref = JointReference(["a", "b", "c"], [-1.0, -1.0, -1.0], [1.0, 1.0, 1.0], JointReferenceConfig(speed, accel))
    ref.reset([0.0, 0.0, 0.0])
    return ref


def test_uniform_scaling_keeps_the_direction_and_caps_the_fastest_joint():
    ref = _ref()
    q = ref.propose([0.1, 0.02, -0.05], DT)
    step = q - 0.0
    assert np.max(np.abs(step)) == pytest.approx(1.5 * DT)
    np.testing.assert_allclose(step / np.linalg.norm(step), np.array([0.1, 0.02, -0.05]) / np.linalg.norm([0.1, 0.02, -0.05]))


def test_small_steps_pass_unchanged():
    ref = _ref()
    np.testing.assert_allclose(ref.propose([0.01, -0.005, 0.0], DT), [0.01, -0.005, 0.0])


def test_feedforward_is_the_accepted_displacement_over_dt():
    ref = _ref()
    q = ref.propose([0.1, 0.0, 0.0], DT)
    ref.commit(q, DT)
    np.testing.assert_allclose(ref.dq, [1.5, 0.0, 0.0])
    np.testing.assert_allclose(ref.q, [0.015, 0.0, 0.0])


def test_hold_clears_feedforward_and_keeps_reference():
    ref = _ref()
    ref.commit(ref.propose([0.01, 0.0, 0.0], DT), DT)
    ref.hold()
    np.testing.assert_array_equal(ref.dq, 0.0)
    np.testing.assert_allclose(ref.q, [0.01, 0.0, 0.0])


def test_bounds_are_pulled_inward_by_nextafter():
    ref = JointReference(["a"], [-1.0], [1.0], JointReferenceConfig(1e9, 1e12))
    ref.reset([0.0])
    q = ref.propose([5.0], DT)
    assert q[0] < 1.0
    assert q[0] == np.nextafter(1.0, -np.inf)
    ref.reset([-7.0])
    assert ref.q[0] == np.nextafter(-1.0, np.inf)


def test_acceleration_cap_limits_speed_changes():
    ref = _ref(speed=10.0, accel=20.0)  # at most 0.2 rad/s change per tick
    ref.commit(ref.propose([1.0, 0.0, 0.0], DT), DT)
    assert ref.dq[0] == pytest.approx(0.2)
    ref.commit(ref.propose([1.0, 0.0, 0.0], DT), DT)
    assert ref.dq[0] == pytest.approx(0.4)


def test_acceleration_scale_prefers_the_largest_feasible_factor():
    s = acceleration_scale(np.array([1.0, 2.0]), np.array([0.5, 1.0]), np.array([0.1, 0.1]), 1.0)
    assert s == pytest.approx(0.55)


def test_acceleration_scale_minimises_violation_when_infeasible():
    # joint 0 wants to keep going +1 rad/s, the proposal reverses it: s = 0 is the least bad
    s = acceleration_scale(np.array([-1.0]), np.array([1.0]), np.array([0.1]), 1.0)
    assert s == pytest.approx(0.0, abs=1e-6)


def test_uniform_scale_of_zero_step_is_one():
    assert uniform_scale(np.zeros(3), np.ones(3)) == 1.0


def test_non_finite_proposal_is_refused():
    ref = _ref()
    with pytest.raises(JointReferenceError, match="finite"):
        ref.propose([np.nan, 0.0, 0.0], DT)


def test_use_before_reset_is_refused():
    ref = JointReference(["a"], [-1.0], [1.0], JointReferenceConfig(1.0, 1.0))
    with pytest.raises(JointReferenceError, match="reset"):
        ref.propose([0.1], DT)


def test_config_requires_positive_caps():
    with pytest.raises(JointReferenceError):
        JointReferenceConfig.from_mapping({"max_speed_rad_s": 0.0, "max_accel_rad_s2": 1.0})
    with pytest.raises(JointReferenceError, match="missing"):
        JointReferenceConfig.from_mapping({"max_speed_rad_s": 1.0})
