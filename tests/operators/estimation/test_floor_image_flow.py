"""Image path of the flow sensor: rendered floor, phase-correlation flow vs the flow model."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from teledora.operators.estimation.floor_image_flow import (FloorCamera, FloorImageError,
                                                 ImageFlowSensor, image_flow)
from teledora.models.config_files import load_estimation_config
from teledora.operators.estimation.flow_model import FlowModel

CONFIG = load_estimation_config()

H = 0.05
OFFSET = (0.08, 0.05, H)


@pytest.fixture(scope="module")
def camera() -> FloorCamera:
    return FloorCamera(CONFIG.flow_image.camera)


def test_texture_is_seeded_and_has_contrast(camera):
    again = FloorCamera(CONFIG.flow_image.camera)
    np.testing.assert_array_equal(camera.render(0.1, 0.2, 0.3, H), again.render(0.1, 0.2, 0.3, H))
    assert camera.render(0, 0, 0, H).std() > 0.05


@pytest.mark.parametrize("orient_yaw", [0.0, 0.6, -1.2])
@pytest.mark.parametrize("twist", [(0.1, 0.0, 0.0), (0.0, 0.08, 0.0), (0.0, 0.0, 0.8), (0.06, -0.03, 0.4)])
def test_image_flow_matches_flow_model(camera, twist, orient_yaw):
    model = FlowModel(replace(CONFIG.flow_sensor, offset_m=OFFSET, orient_yaw_rad=orient_yaw))
    sensor = ImageFlowSensor(camera, OFFSET, orient_yaw)
    vx, vy, wz = twist
    dt = 0.02
    assert sensor.read(0, 0.3, -0.2, 0.5) is None  # first frame
    # advance the base exactly along the constant twist (body frame) for one frame
    yaw = 0.5 + wz * dt
    if abs(wz) > 1e-9:
        dx = (vx * np.sin(wz * dt) + vy * (np.cos(wz * dt) - 1)) / wz
        dy = (vx * (1 - np.cos(wz * dt)) + vy * np.sin(wz * dt)) / wz
    else:
        dx, dy = vx * dt, vy * dt
    c, s = np.cos(0.5), np.sin(0.5)
    fx, fy, quality, got_dt = sensor.read(20_000_000, 0.3 + c * dx - s * dy, -0.2 + s * dx + c * dy, yaw)
    assert got_dt == pytest.approx(dt)
    expected = model.sensor_flow(model.body_flow(vx, vy, wz, H))
    # one frame of phase correlation on a rotated texture is good to about 10 %; a mounting yaw
    # applied with the wrong sign turns the vector by twice the yaw (1.2 rad here: a 113 % error)
    assert np.linalg.norm([fx - expected[0], fy - expected[1]]) < 0.08 + 0.12 * np.linalg.norm(expected)
    assert quality > 100


def test_sensor_turned_right_reads_forward_motion_on_its_x_axis(camera):
    """FLOW_ORIENT_YAW +90 deg: the sensor's x axis points right, its y axis backwards.

    Driving forward at v, the sensor moves along its own -y: ArduPilot's sensor
    equations give flow_x = -v_y(sensor)/h = +v/h and flow_y = 0.
    """
    sensor = ImageFlowSensor(camera, (0.0, 0.0, H), np.pi / 2)
    assert sensor.read(0, 0.0, 0.0, 0.0) is None
    fx, fy, _, _ = sensor.read(20_000_000, 0.1 * 0.02, 0.0, 0.0)
    np.testing.assert_allclose([fx, fy], [0.1 / H, 0.0], atol=0.08 + 0.05 * 0.1 / H)


def test_featureless_motion_blur_lowers_quality(camera):
    a = camera.render(0, 0, 0, H)
    _, _, good = image_flow(a, camera.render(0.001, 0, 0, H), 0.02, camera.config.focal_px)
    _, _, bad = image_flow(a, camera.render(0.05, 0.05, 0, H), 0.02, camera.config.focal_px)  # no overlap
    assert good > 2 * bad


def test_errors():
    with pytest.raises(FloorImageError):
        replace(CONFIG.flow_image.camera, image_size_px=4)
    with pytest.raises(FloorImageError):
        image_flow(np.zeros((8, 8)), np.zeros((9, 9)), 0.02, 50.0)
