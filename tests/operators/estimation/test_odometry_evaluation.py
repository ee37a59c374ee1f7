"""The whole evaluation pipeline on closed-form cases."""

from __future__ import annotations

import pytest

from teledora.operators.estimation.odometry_evaluation import EvaluationConfig, EvaluationError, evaluate_odometry
from teledora.operators.estimation.trajectory_association import Trajectory
from tests.operators.estimation.trajectory_cases import arc, line, lissajous, rotated, stamps


def test_offset_none_vs_se2():
    t = stamps()
    truth, est = line(t), line(stamps(rate_hz=50.0), offset=(0.3, -0.4))
    raw = evaluate_odometry(est, truth, EvaluationConfig(alignment="none")).summary()
    assert raw["ape_m"]["rmse"] == pytest.approx(0.5)
    assert raw["alignment"]["method"] == "none"
    assert raw["association"]["fraction_associated"] == 1.0
    aligned = evaluate_odometry(est, truth, EvaluationConfig(alignment="se2")).summary()
    assert aligned["ape_m"]["max"] == pytest.approx(0.0, abs=1e-9)
    assert aligned["alignment"]["translation_m"][:2] == pytest.approx([-0.3, 0.4])


def test_rotation_recovered_by_se2_and_reported_by_none():
    truth = arc(stamps())
    est = rotated(truth, 0.3)
    none = evaluate_odometry(est, truth, EvaluationConfig(alignment="none")).summary()
    assert none["yaw_error_rad"]["mean"] == pytest.approx(0.3)
    se2 = evaluate_odometry(est, truth, EvaluationConfig(alignment="se2")).summary()
    assert se2["alignment"]["yaw_rad"] == pytest.approx(-0.3)
    assert se2["yaw_error_rad"]["max"] == pytest.approx(0.0, abs=1e-9)


def test_lag_estimated_with_se2_on_a_curve():
    tau = 0.08
    truth = lissajous(stamps(rate_hz=120.0))
    est = lissajous(stamps(0.5, 9.5, rate_hz=50.0), lag_s=tau)
    est = rotated(est, 1.0)
    progress: list[str] = []
    cfg = EvaluationConfig(alignment="se2", estimate_lag=True, max_lag_s=0.2, lag_step_s=0.01)
    s = evaluate_odometry(est, truth, cfg, progress=progress.append).summary()
    assert s["association"]["lag_s"] == pytest.approx(tau, abs=5e-4)
    assert s["association"]["lag_estimated"] is True
    assert s["ape_m"]["rmse"] < 1e-3
    assert any("lag" in p for p in progress)


def test_scale_drift_reported():
    t = stamps()
    s = evaluate_odometry(line(t, scale=0.9), line(t), EvaluationConfig(alignment="origin")).summary()
    assert s["drift"]["percent_of_distance"] == pytest.approx(10.0)
    assert s["rpe"]["translation_m_per_m"]["mean"] == pytest.approx(0.1)


def test_no_overlap_is_a_clear_error():
    truth = line(stamps())
    est = Trajectory(truth.stamps_ns + 10**12, truth.positions, truth.orientations)
    with pytest.raises(EvaluationError, match="host clock"):
        evaluate_odometry(est, truth)
    with pytest.raises(EvaluationError, match="alignment"):
        EvaluationConfig(alignment="best")
