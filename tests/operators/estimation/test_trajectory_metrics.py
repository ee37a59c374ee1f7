"""Metrics checked against closed-form values: offset, scale, lag, rotation."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.estimation.trajectory_association import Trajectory, associate
from teledora.operators.estimation.trajectory_metrics import (
    ErrorStats,
    MetricError,
    drift,
    path_length,
    position_errors,
    relative_errors,
    yaw_errors,
)
from tests.operators.estimation.trajectory_cases import DURATION_S, SPEED_M_S, arc, line, rotated, stamps

LENGTH_M = SPEED_M_S * DURATION_S


def test_constant_offset():
    t = stamps()
    truth, est = line(t), line(t, offset=(0.3, -0.4))
    ape = ErrorStats.of(position_errors(est, truth))
    assert (ape.rmse, ape.mean, ape.max, ape.std) == pytest.approx((0.5, 0.5, 0.5, 0.0))
    assert ErrorStats.of(yaw_errors(est, truth)).max == 0.0
    rpe = relative_errors(est, truth, delta_m=1.0)
    assert rpe.translation_per_m == pytest.approx(np.zeros(len(rpe.translation_per_m)), abs=1e-9)
    d = drift(est, truth)
    assert d.path_length_m == pytest.approx(LENGTH_M)
    assert d.percent_of_distance == pytest.approx(100 * 0.5 / LENGTH_M)


def test_scale_error():
    s = 1.1
    t = stamps()
    truth, est = line(t), line(t, scale=s)
    e = position_errors(est, truth)
    travelled = SPEED_M_S * t / 1e9
    assert e == pytest.approx((s - 1) * travelled)
    ape = ErrorStats.of(e)
    assert ape.rmse == pytest.approx((s - 1) * np.sqrt(np.mean(travelled**2)))
    assert ape.max == pytest.approx((s - 1) * LENGTH_M)
    rpe = relative_errors(est, truth, delta_m=1.0)
    assert len(rpe.translation_per_m) == len(t) - 200  # windows need 1 m = 2 s of travel ahead
    assert rpe.translation_per_m == pytest.approx(np.full(len(rpe.translation_per_m), s - 1))
    assert drift(est, truth).percent_of_distance == pytest.approx(100 * (s - 1))


def test_time_lag_on_a_line():
    tau = 0.2
    truth = line(stamps())
    est = line(stamps(0.5, 9.5), lag_s=tau)
    a = associate(est, truth, max_diff_s=0.011)
    ape = ErrorStats.of(position_errors(a.estimate, a.truth))
    assert (ape.rmse, ape.max) == pytest.approx((SPEED_M_S * tau, SPEED_M_S * tau))
    rpe = relative_errors(a.estimate, a.truth)
    assert rpe.translation_per_m == pytest.approx(np.zeros(len(rpe.translation_per_m)), abs=1e-9)


def test_pure_rotation_about_the_origin():
    theta = 0.3
    truth = arc(stamps())
    est = rotated(truth, theta)
    e = position_errors(est, truth)
    radius = np.linalg.norm(truth.positions[:, :2], axis=1)
    assert e == pytest.approx(2 * radius * np.sin(theta / 2))
    assert yaw_errors(est, truth) == pytest.approx(np.full(len(e), theta))
    rpe = relative_errors(est, truth, delta_m=0.5)
    assert rpe.translation_per_m.max() == pytest.approx(0.0, abs=1e-9)
    assert rpe.yaw_per_m.max() == pytest.approx(0.0, abs=1e-9)
    d = drift(est, truth)
    assert d.final_yaw_error_rad == pytest.approx(theta)
    # half a circle of radius 1 m measured by 5 cm chords: short by (0.05)^2 / 24 relative
    assert d.path_length_m == pytest.approx(np.pi * (1 - 0.05**2 / 24), rel=2e-5)
    assert drift(est, truth, min_step_m=0.0).path_length_m == pytest.approx(np.pi, rel=1e-4)


def test_rpe_yaw_rate_error():
    """A heading that drifts at k rad per metre gives RPE yaw k rad/m."""
    t = stamps()
    truth = line(t)
    k = 0.05
    est = Trajectory.from_planar(t, truth.positions[:, 0], truth.positions[:, 1], k * truth.positions[:, 0])
    rpe = relative_errors(est, truth, delta_m=1.0)
    assert rpe.yaw_per_m == pytest.approx(np.full(len(rpe.yaw_per_m), k))


def test_spatial_dims_and_helpers():
    t = stamps(0, 1)
    truth = line(t)
    est = Trajectory(t, truth.positions + [0, 0, 0.2], truth.orientations)
    assert position_errors(est, truth, dims=2).max() == 0.0
    assert position_errors(est, truth, dims=3) == pytest.approx(np.full(len(t), 0.2))
    assert path_length(truth)[-1] == pytest.approx(SPEED_M_S)
    assert ErrorStats.of(np.array([])).count == 0
    with pytest.raises(MetricError):
        position_errors(est, truth, dims=4)
    with pytest.raises(MetricError):
        relative_errors(est, truth, delta_m=0)
    with pytest.raises(MetricError):
        drift(est.select(slice(0, 3)), truth)
