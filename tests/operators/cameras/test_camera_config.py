"""cameras.yaml's checks and the calibration message built from it."""

from __future__ import annotations

import math

import pytest

from teledora import models
from teledora.operators.cameras.camera_config import (
    CalibrationClock,
    CamerasConfigError,
    calibration_message,
    cameras_config_from_dict,
)
from teledora.operators.contract.messages import decode, encode


def _data() -> dict:
    return models.load_yaml("alohamini2/cameras.yaml")


def test_shipped_file_has_all_five_cameras_with_their_urdf_mounts() -> None:
    config = cameras_config_from_dict(_data())
    assert set(config.cameras) == {"chest", "top_front", "top_back", "left_wrist", "right_wrist"}
    assert config.cameras["chest"].mount.parent_frame == "vertical_link"
    assert config.cameras["top_back"].mount.rpy_rad == pytest.approx((-3.1416, -0.63429, 1.5708))
    assert all(c.fourcc == "MJPG" and c.device.startswith("/dev/teledora_cam_") for c in config.cameras.values())


@pytest.mark.parametrize("change, match", [
    (lambda d: d["cameras"].pop("chest"), "missing"),
    (lambda d: d["cameras"].update(nose={"device": "/dev/x", "mount": d["cameras"]["chest"]["mount"]}), "unknown camera"),
    (lambda d: d["camera_defaults"].update(fourcc="MJPEG"), "fourcc"),
    (lambda d: d["camera_defaults"].update(rate_hz=0.0), "rate_hz"),
    (lambda d: d["camera_defaults"].update(fx=-1.0), "fx"),
    (lambda d: d.update(reconnect_period_s=0.0), "reconnect_period_s"),
    (lambda d: d["cameras"]["chest"]["mount"].update(xyz_m=[0.0, 1.0]), "xyz_m"),
])
def test_bad_settings_are_refused(change, match) -> None:
    data = _data()
    change(data)
    with pytest.raises(CamerasConfigError, match=match):
        cameras_config_from_dict(data)


def test_calibration_message_round_trips_through_the_contract() -> None:
    cam = cameras_config_from_dict(_data()).cameras["left_wrist"]
    msg = calibration_message("left_wrist", "v4l2", cam.device, cam.intrinsics(), cam.rate_hz, cam.mount, 5)
    back = decode("CameraCalibration", encode("CameraCalibration", msg))
    assert back["parent_frame"] == "left_Fixed_Jaw" and back["width"] == 640 and back["fx"] == 320.0
    assert list(back["mount_rpy"]) == pytest.approx([-0.42318, 0.0, 0.0])
    bad = dict(msg, fx=0.0)
    with pytest.raises(Exception, match="fx"):
        encode("CameraCalibration", bad)
    with pytest.raises(CamerasConfigError):
        calibration_message("x", "sim", "d", cam.intrinsics(), math.nan, cam.mount, 5)


def test_calibration_goes_out_at_start_and_every_period() -> None:
    clock = CalibrationClock(2.0)
    t0 = 10**18
    assert clock.due(t0)
    assert not clock.due(t0 + 1_999_999_999)
    assert clock.due(t0 + 2_000_000_000)
    assert not clock.due(t0 + 2_100_000_000)
