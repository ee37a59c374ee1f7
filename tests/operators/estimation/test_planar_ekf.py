"""Planar EKF: prediction, updates, gating, time handling."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from teledora.operators.estimation.flow_model import FlowModel
from teledora.operators.estimation.planar_ekf import EkfConfig, EkfConfigError, MeasurementRejected, PlanarEkf
from teledora.operators.geometry import wrap_angle
from teledora.models.config_files import load_estimation_config

H = 0.05


CONFIG = load_estimation_config()


def _ekf(offset=(0.08, 0.05, H), **kw) -> PlanarEkf:
    return PlanarEkf(replace(CONFIG.ekf, **kw), FlowModel(replace(CONFIG.flow_sensor, offset_m=offset)))


def test_prediction_moves_along_heading():
    ekf = _ekf()
    ekf.x[:6] = [0.0, 0.0, math.pi / 2, 0.2, 0.0, 0.0]
    ekf.predict_to(0)
    ekf.predict_to(1_000_000_000)
    np.testing.assert_allclose(ekf.x[:3], [0.0, 0.2, math.pi / 2], atol=1e-12)


def test_prediction_on_a_circle_stays_on_the_circle():
    ekf = _ekf()
    ekf.x[:6] = [0.0, 0.0, 0.0, 0.1, 0.0, 0.5]  # radius 0.2 m
    ekf.predict_to(0)
    ekf.predict_to(int(2 * math.pi / 0.5 * 1e9))  # one full lap
    np.testing.assert_allclose(ekf.x[:2], [0.0, 0.0], atol=1e-4)


def test_covariance_grows_without_measurements_and_is_symmetric():
    ekf = _ekf()
    ekf.predict_to(0)
    p0 = ekf.pose_covariance().copy()
    ekf.x[3] = 0.1
    ekf.predict_to(500_000_000)
    p1 = ekf.pose_covariance()
    assert p1[0, 0] > p0[0, 0]
    np.testing.assert_allclose(ekf.P, ekf.P.T, atol=1e-15)


def test_flow_update_estimates_velocity_and_spin_with_offset():
    model = FlowModel(replace(CONFIG.flow_sensor, offset_m=(0.08, 0.05, H)))
    ekf = _ekf()
    truth = np.array([0.05, -0.02, 0.6])
    t = 0
    for _ in range(200):
        t += 10_000_000
        ekf.predict_to(t)
        ekf.update_gyro(truth[2])
        ekf.update_flow(model.body_flow(*truth, H), H)
    np.testing.assert_allclose(ekf.x[3:6], truth, atol=3e-3)  # part of the yaw rate sits in the bias


def test_gyro_update_pulls_yaw_rate():
    ekf = _ekf()
    ekf.predict_to(0)
    for k in range(1, 50):
        ekf.predict_to(k * 10_000_000)
        ekf.update_gyro(0.3)
    assert ekf.x[5] == pytest.approx(0.3, abs=1e-3)
    assert ekf.x[2] > 0.0


def test_odom_update():
    ekf = _ekf()
    ekf.predict_to(0)
    for k in range(1, 50):
        ekf.predict_to(k * 10_000_000)
        ekf.update_odom_twist(0.1, 0.02, -0.2)
    np.testing.assert_allclose(ekf.x[3:6], [0.1, 0.02, -0.2], atol=2e-3)


def test_gate_rejects_outlier_and_keeps_state():
    ekf = _ekf(gate_chi2=9.0)
    ekf.predict_to(0)
    for k in range(1, 20):
        ekf.predict_to(k * 10_000_000)
        ekf.update_flow([0.0, 0.0], H)
    before = ekf.x.copy()
    with pytest.raises(MeasurementRejected, match="gate"):
        ekf.update_flow([0.0, 50.0], H)
    np.testing.assert_array_equal(ekf.x, before)


def test_late_measurement_is_counted_not_integrated_backwards():
    ekf = _ekf()
    ekf.predict_to(1_000_000_000)
    assert not ekf.predict_to(900_000_000)
    assert ekf.late_measurements == 1
    assert ekf.stamp_ns == 1_000_000_000


def test_long_gap_is_not_integrated():
    ekf = _ekf(max_gap_s=0.5)
    ekf.x[:] = [1.0, 2.0, 0.3, 0.2, 0.0, 0.1, 0.004]
    ekf.predict_to(0)
    ekf.predict_to(5_000_000_000)
    np.testing.assert_allclose(ekf.x, [1.0, 2.0, 0.3, 0.0, 0.0, 0.0, 0.004])  # the bias is kept
    assert ekf.skipped_gaps == 1


def test_reset():
    ekf = _ekf()
    ekf.x[:] = 5.0
    ekf.reset(1.0, -1.0, 4.0)
    np.testing.assert_allclose(ekf.x, [1.0, -1.0, wrap_angle(4.0), 0, 0, 0, 0])
    assert ekf.stamp_ns is None


def test_config_validation():
    with pytest.raises(EkfConfigError, match="flow_noise_rad_s"):
        replace(CONFIG.ekf, flow_noise_rad_s=0.0)
    with pytest.raises(EkfConfigError, match="accel_noise_m_s2"):
        replace(CONFIG.ekf, accel_noise_m_s2=float("nan"))
    with pytest.raises(EkfConfigError, match="unknown"):
        EkfConfig.from_dict({"flow_noise": 0.1})


def test_gate_cannot_lock_the_filter_out():
    ekf = _ekf(gate_chi2=9.0, max_gated_in_row=3)
    ekf.predict_to(0)
    rejected = 0
    for k in range(1, 6):
        ekf.predict_to(k * 10_000_000)
        try:
            ekf.update_flow([0.0, 10.0], H)  # the base was really pushed to 0.5 m/s
        except MeasurementRejected:
            rejected += 1
    assert rejected == 3
    assert ekf.x[3] > 0.05


def test_gyro_is_never_gated():
    ekf = _ekf(gate_chi2=1.0)
    ekf.predict_to(0)
    ekf.update_gyro(2.0)
    assert ekf.x[5] > 1.0


def test_gyro_bias_is_learnt_from_wheel_odometry():
    ekf = _ekf()
    ekf.predict_to(0)
    for k in range(1, 1500):  # 15 s turning at 0.3 rad/s, gyro reads 0.01 rad/s high
        ekf.predict_to(k * 10_000_000)
        ekf.update_gyro(0.3 + 0.01)
        if k % 2 == 0:
            ekf.update_odom_twist(0.0, 0.0, 0.3)
    assert ekf.x[6] == pytest.approx(0.01, abs=0.002)
    assert ekf.x[5] == pytest.approx(0.3, abs=0.002)
