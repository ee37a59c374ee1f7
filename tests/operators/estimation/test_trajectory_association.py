"""Time association of estimate and truth."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.estimation.trajectory_association import (
    AssociationError,
    Trajectory,
    TrajectoryError,
    associate,
    estimate_lag,
)
from tests.operators.estimation.trajectory_cases import SPEED_M_S, line, lissajous, stamps


def _rmse(a):
    e = np.linalg.norm(a.estimate.positions[:, :2] - a.truth.positions[:, :2], axis=1)
    return float(np.sqrt(np.mean(e * e)))


def test_trajectory_validation():
    with pytest.raises(TrajectoryError, match="strictly increasing"):
        Trajectory.from_planar([2, 1], [0, 0], [0, 0], [0, 0])
    with pytest.raises(TrajectoryError, match="equal length"):
        Trajectory(np.array([1, 2]), np.zeros((3, 3)), np.tile([0, 0, 0, 1.0], (2, 1)))
    with pytest.raises(TrajectoryError, match="finite"):
        Trajectory.from_planar([1, 2], [0, np.nan], [0, 0], [0, 0])


def test_interpolation_is_exact_on_a_line_at_offset_instants():
    truth = line(stamps(rate_hz=120.0))
    est = line(stamps(0.013, 9.9, rate_hz=50.0))
    a = associate(est, truth, method="interpolate", max_diff_s=0.01)
    assert a.fraction == 1.0
    assert _rmse(a) == pytest.approx(0.0, abs=1e-9)


def test_nearest_error_bounded_by_half_period():
    truth = line(stamps(rate_hz=100.0))
    est = line(stamps(0.004, 9.9, rate_hz=50.0))
    a = associate(est, truth, method="nearest", max_diff_s=0.006)
    # nearest truth is 4 ms away for every sample: error = v * 4 ms exactly
    e = np.abs(a.estimate.positions[:, 0] - a.truth.positions[:, 0])
    assert e == pytest.approx(np.full(len(e), SPEED_M_S * 0.004), abs=1e-9)
    assert associate(est, truth, method="nearest", max_diff_s=0.003).fraction == 0.0


def test_dropout_is_not_bridged():
    t = stamps()
    truth_full = line(t)
    keep = (t < 3e9) | (t > 4e9)  # one second of mocap dropout
    truth = truth_full.select(keep)
    est = line(stamps(0.0, 10.0, rate_hz=50.0))
    # truth stops at 2.99 s and resumes at 4.01 s; the estimate runs at 50 Hz
    expected = {"nearest": (3.02, 3.98, 49), "interpolate": (3.00, 4.00, 51)}
    for method, (first, last, count) in expected.items():
        a = associate(est, truth, method=method, max_diff_s=0.02)
        lost = est.stamps_ns[~np.isin(est.stamps_ns, a.estimate.stamps_ns)] / 1e9
        assert (lost.min(), lost.max(), len(lost)) == (pytest.approx(first), pytest.approx(last), count)
        assert a.fraction == pytest.approx((len(est) - count) / len(est))


def test_lag_applied_and_recovered_on_a_line():
    tau = 0.2
    truth = line(stamps())
    est = line(stamps(0.5, 9.5, rate_hz=50.0), lag_s=tau)
    raw = associate(est, truth)
    assert _rmse(raw) == pytest.approx(SPEED_M_S * tau, abs=1e-9)
    assert _rmse(associate(est, truth, lag_s=tau)) == pytest.approx(0.0, abs=1e-9)
    lag, cost = estimate_lag(est, truth, _rmse, max_lag_s=0.5, step_s=0.01, tolerance_s=1e-5)
    assert lag == pytest.approx(tau, abs=1e-4)
    assert cost == pytest.approx(0.0, abs=1e-4)


def test_lag_recovered_on_a_curve_with_negative_lag():
    tau = -0.137
    truth = lissajous(stamps(rate_hz=120.0))
    est = lissajous(stamps(0.5, 9.5, rate_hz=30.0), lag_s=tau)
    lag, _ = estimate_lag(est, truth, _rmse, max_lag_s=0.3, step_s=0.02, tolerance_s=1e-5)
    assert lag == pytest.approx(tau, abs=5e-4)


def test_bad_parameters():
    truth = line(stamps())
    with pytest.raises(AssociationError, match="method"):
        associate(truth, truth, method="closest")
    with pytest.raises(AssociationError, match="positive"):
        associate(truth, truth, max_diff_s=0)
    with pytest.raises(AssociationError, match="nothing"):
        associate(truth.select(np.zeros(len(truth), bool)), truth)
    far = line(stamps(100.0, 110.0))
    with pytest.raises(AssociationError, match="no lag"):
        estimate_lag(far, truth, _rmse, max_lag_s=0.1)
