"""Time-parameterisation under joint caps (TOPP-RA) and the check of sampled
trajectories against the caps."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.ik.path_timing import PathTimingError, check_joint_caps, sample_at_rate, time_parameterise

V, A = 1.5, 40.0


def test_a_straight_move_takes_the_bang_coast_bang_time():
    s = np.linspace(0.0, 1.0, 11)
    q = np.stack([s, 0.5 * s], axis=1)  # joint 0 moves 1 rad, joint 1 half as far
    timed = time_parameterise(s, q, [V, V], [A, A], gridpoints=201)
    optimum = 1.0 / V + V / A  # accelerate at A to V, cruise, brake at A
    assert optimum <= timed.duration_s <= optimum * 1.01
    np.testing.assert_allclose(timed([0.0, timed.duration_s]), [[0.0, 0.0], [1.0, 0.5]], atol=1e-9)
    np.testing.assert_allclose(timed([0.0, timed.duration_s], 1), 0.0, atol=1e-6)  # rest to rest


def test_samples_are_one_period_apart_and_end_at_the_end():
    s = np.linspace(0.0, 1.0, 5)
    timed = time_parameterise(s, np.stack([s, -s], axis=1), [V, V], [A, A], gridpoints=41)
    times, q = sample_at_rate(timed, 100.0)
    np.testing.assert_allclose(np.diff(times), 0.01, atol=1e-12)
    assert times[-1] >= timed.duration_s
    np.testing.assert_allclose(q[-1], [1.0, -1.0], atol=1e-9)
    # the stretch to whole periods only slows the motion
    assert check_joint_caps(times, q, ["a", "b"], V * 1.02, A * 1.02) is None


def test_a_curved_path_stays_within_reduced_caps_when_sampled():
    s = np.linspace(0.0, 1.0, 9)
    q = np.stack([np.sin(3 * s), np.cos(2 * s) - 1.0, s**2], axis=1)
    timed = time_parameterise(s, q, np.full(3, 0.95 * V), np.full(3, 0.95 * A), gridpoints=81)
    times, samples = sample_at_rate(timed, 100.0)
    assert check_joint_caps(times, samples, ["a", "b", "c"], V, A) is None


def test_check_names_the_joint_and_the_cap():
    times = np.arange(11) * 0.01
    q = np.zeros((11, 2))
    q[:, 1] = 2.0 * times  # 2 rad/s on joint b, straight from rest
    violation = check_joint_caps(times, q, ["a", "b"], V, 1e6)
    assert violation.joint == "b" and violation.quantity == "speed"
    assert violation.value == pytest.approx(2.0) and violation.cap == V
    assert "joint b would reach 2.000 rad/s speed" in str(violation) and "(cap 1.500 rad/s)" in str(violation)
    # from rest to 2 rad/s in one period: 200 rad/s² at the start
    violation = check_joint_caps(times, q, ["a", "b"], 10.0, A)
    assert violation.quantity == "acceleration" and violation.value == pytest.approx(200.0)
    assert violation.time_s == pytest.approx(0.0)


def test_check_passes_a_trajectory_within_the_caps():
    times = np.arange(201) * 0.01
    q = 0.5 * (1 - np.cos(np.pi * times / 2.0))[:, None]  # peak 0.39 rad/s, 0.62 rad/s²
    assert check_joint_caps(times, q, ["a"], V, A) is None


def test_invalid_input_is_refused():
    with pytest.raises(PathTimingError, match="increasing"):
        time_parameterise([0.0, 0.0, 1.0], np.zeros((3, 1)), [V], [A], 11)
    with pytest.raises(PathTimingError, match="caps"):
        time_parameterise([0.0, 1.0], np.zeros((2, 1)), [0.0], [A], 11)
    with pytest.raises(PathTimingError, match="expected"):
        time_parameterise([0.0, 1.0], np.zeros((2, 2)), [V], [A], 11)
    with pytest.raises(PathTimingError, match="increase"):
        check_joint_caps([0.0, 0.0], np.zeros((2, 1)), ["a"], V, A)
