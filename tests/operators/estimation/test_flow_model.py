"""Flow model: ArduPilot sign conventions, offset, scalers, inverse, validity."""

from __future__ import annotations

import math
from dataclasses import replace
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import load_estimation_config
from teledora.operators.estimation.flow_model import FlowModel, FlowModelConfig, FlowModelError, FlowReadingInvalid


SENSOR = load_estimation_config().flow_sensor


def _model(**kw) -> FlowModel:
    return FlowModel(replace(SENSOR, **kw))


def test_forward_motion_gives_positive_flow_y_like_ardupilot():
    # ArduPilot (FRD): flow_y = v_x / h for forward motion, flow_x = -v_y(FRD)/h.
    m = _model(offset_m=(0.0, 0.0, 0.1))
    np.testing.assert_allclose(m.body_flow(0.2, 0.0, 0.0, 0.1), [0.0, 2.0])
    # Moving left (FLU +y) is moving -y in FRD, so flow_x = +v_left / h.
    np.testing.assert_allclose(m.body_flow(0.0, 0.1, 0.0, 0.1), [1.0, 0.0])


def test_body_rates_enter_like_ardupilot_sitl():
    m = _model(offset_m=(0.0, 0.0, 0.0))
    # roll rate (x) adds directly; pitch rate is -w_y(FLU) in FRD.
    np.testing.assert_allclose(m.body_flow(0.0, 0.0, 0.0, 0.1, wx=0.3, wy=0.2), [0.3, -0.2], atol=1e-12)


def test_spin_in_place_with_offset_produces_flow():
    m = _model(offset_m=(0.08, 0.05, 0.05))
    f = m.body_flow(0.0, 0.0, 1.0, 0.05)
    # sensor velocity = w x r = (-wz*ry, wz*rx) = (-0.05, 0.08)
    np.testing.assert_allclose(f, [0.08 / 0.05, -0.05 / 0.05])
    # without the planar offset the same spin is invisible
    np.testing.assert_allclose(FlowModel(m.config.without_offset()).body_flow(0.0, 0.0, 1.0, 0.05), [0.0, 0.0])


def test_jacobian_matches_forward_model():
    m = _model(offset_m=(0.08, 0.05, 0.05))
    J = m.measurement_jacobian(0.07)
    twist = np.array([0.1, -0.03, 0.4])
    np.testing.assert_allclose(J @ twist, m.body_flow(*twist, 0.07))


@pytest.mark.parametrize("twist", [(0.1, 0.0, 0.0), (0.05, -0.02, 0.7), (0.0, 0.0, -1.2)])
def test_inverse_recovers_velocity(twist):
    m = _model(offset_m=(0.08, 0.05, 0.05), orient_yaw_rad=0.4, scaler_x_ppt=25.0, scaler_y_ppt=-40.0)
    body = m.body_flow(*twist, 0.05)
    np.testing.assert_allclose(m.velocity_from_flow(body, twist[2], 0.05), twist[:2], atol=1e-12)


def test_sensor_yaw_and_scaler_round_trip_and_calibrate_gain():
    m = _model(orient_yaw_rad=math.pi / 2, scaler_x_ppt=0.0, scaler_y_ppt=0.0)
    # sensor turned 90 deg left: body flow (1, 0) is seen on the sensor's -y axis
    np.testing.assert_allclose(m.sensor_flow([1.0, 0.0]), [0.0, -1.0], atol=1e-12)
    np.testing.assert_allclose(m.corrected_flow(m.sensor_flow([0.3, -0.7])), [0.3, -0.7], atol=1e-12)
    # a sensor reading 5 % low is corrected by a scaler of 1/0.95 - 1
    ppt = (1 / 0.95 - 1) * 1000
    cal = _model(scaler_x_ppt=ppt, scaler_y_ppt=ppt)
    np.testing.assert_allclose(cal.corrected_flow(0.95 * cal.sensor_flow([1.0, 2.0])), [1.0, 2.0])


def test_validity_window():
    m = _model(min_height_m=0.02, max_height_m=0.10, min_quality=50, max_rate_rad_s=2.5)
    m.check_reading([0.1, 0.1], 200, 0.05)
    with pytest.raises(FlowReadingInvalid, match="ground distance"):
        m.check_reading([0.1, 0.1], 200, 0.15)
    with pytest.raises(FlowReadingInvalid, match="quality"):
        m.check_reading([0.1, 0.1], 10, 0.05)
    with pytest.raises(FlowReadingInvalid, match="EK3_MAX_FLOW"):
        m.check_reading([-2.6, 0.0], 200, 0.05)
    with pytest.raises(FlowReadingInvalid, match="4.2 rad/s"):
        m.check_reading([3.0, 3.0], 200, 0.05)
    m.check_reading([2.6, 0.0], 200, 0.05)  # EKF3's per-axis test is signed
    assert not m.is_valid([np.nan, 0.0], 200, 0.05)


def _ekf3_fuses(raw_flow, quality, max_flow):
    """EKF3's acceptance of one reading, restated from AP_NavEKF3 (Measurements + OptFlowFusion).

    writeOptFlowMeas buffers a reading only when quality > 0 and the rate vector's
    length is below 4.2 rad/s (the body rates' too; zero on a level floor); it stores
    flowRadXY = -rawFlowRates. FuseOptFlow fuses only while flowRadXY.x and
    flowRadXY.y are each below EK3_MAX_FLOW (plain '<', no absolute value).
    """
    rx, ry = raw_flow
    buffered = quality > 0 and math.sqrt(rx * rx + ry * ry) < 4.2
    flow_rad_x, flow_rad_y = -rx, -ry
    return buffered and flow_rad_x < max_flow and flow_rad_y < max_flow


@pytest.mark.parametrize("max_flow", [2.5, 1.0, 4.0])
def test_rate_limits_match_ekf3_on_a_grid(max_flow):
    m = _model(min_quality=1, max_rate_rad_s=max_flow)
    grid = np.linspace(-5.0, 5.0, 201)  # 40,401 readings, steps of 0.05 rad/s (the limits lie on the grid)
    disagree = [(x, y) for x in grid for y in grid
                if m.is_valid([x, y], 200, 0.05) != _ekf3_fuses((x, y), 200, max_flow)]
    assert disagree == []


def test_speed_bounds_follow_ekf3():
    m = _model(max_rate_rad_s=2.5)
    h = 0.05
    cases = {0.0: 4.2 * h, math.pi / 2: 4.2 * h, math.pi: 2.5 * h, -math.pi / 2: 2.5 * h,
             -3 * math.pi / 4: 2.5 * h * math.sqrt(2)}
    for direction, expected in cases.items():
        bound = m.max_speed_m_s(h, direction)
        assert bound == pytest.approx(expected)
        for v, accepted in ((0.999 * bound, True), (1.001 * bound, False)):
            flow = m.body_flow(v * math.cos(direction), v * math.sin(direction), 0.0, h)
            assert bool(_ekf3_fuses(flow, 200, 2.5)) is accepted
            assert bool(m.is_valid(flow, 200, h)) is accepted


def test_config_errors():
    with pytest.raises(FlowModelError, match="offset_m"):
        replace(SENSOR, offset_m=(0.0, 0.0))
    with pytest.raises(FlowModelError, match="min_height_m"):
        replace(SENSOR, min_height_m=0.2, max_height_m=0.1)
    with pytest.raises(FlowModelError, match="unknown"):
        FlowModelConfig.from_dict({"offset": [0, 0, 0]})
    with pytest.raises(FlowModelError, match="height_m"):
        _model().body_flow(0.1, 0, 0, 0.0)


def test_estimation_yaml_offset_matches_model_site():
    cfg = FlowModelConfig.from_dict(models.load_yaml("alohamini2/estimation.yaml")["flow_sensor"])
    root = ET.parse(models.path("alohamini2/alohamini2.xml")).getroot()
    base = root.find(".//body[@name='base_link']")
    site = base.find("site[@name='flow_sensor']")
    assert site is not None, "flow_sensor must be a site directly on base_link"
    pos = [float(v) for v in site.get("pos").split()]
    np.testing.assert_allclose(cfg.offset_m, pos, atol=1e-9)
    assert cfg.min_height_m <= pos[2] <= cfg.max_height_m
