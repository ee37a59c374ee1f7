"""`teledora calibrate` against the pty servo emulator, and the LeRobot import."""

import json

import pytest
import yaml

from teledora.cli import main as cli_main
from teledora.commands.calibrate import calibrate_arm
from teledora.devices.drive.feetech_bus import FeetechBus
from teledora.operators.drive.servo_calibration import CalibrationError, calibration_from_dict
from teledora.fakes.feetech_bus import FakeFeetechBus, arm_servos  # noqa: E402

IDS = {"shoulder_pan": 1, "shoulder_lift": 2, "elbow_flex": 3, "wrist_flex": 4, "wrist_yaw_joint": 5, "wrist_roll": 6, "gripper": 7}


def test_interactive_flow_writes_offsets_and_records_ranges():
    servos = arm_servos()
    for s in servos:
        s.model.position_ticks = 3000.0  # zero pose reads 3000 before calibration
    with FakeFeetechBus(servos) as fake:
        bus = FeetechBus(fake.port, timeout_s=0.2)
        bus.connect()
        sweeps = iter([-400, 500, 0])

        def move_and_maybe_stop():
            step = next(sweeps, None)
            if step is None:
                return True
            for s in servos:
                s.model.position_ticks = 3000.0 + step
            return False

        cals = calibrate_arm(bus, "left", IDS, ask=lambda _: "", stop_recording=move_and_maybe_stop, poll_s=0.0)
        # after homing the zero pose reads 2047: offset = 3000 - 2047
        assert bus.read(1, "Homing_Offset") == 953 and bus.read(1, "Present_Position") == 2047
        bus.close()
    assert cals["left_elbow_flex"].homing_offset == 953
    assert (cals["left_elbow_flex"].range_min, cals["left_elbow_flex"].range_max) == (2047 - 400, 2047 + 500)
    assert (cals["left_wrist_roll"].range_min, cals["left_wrist_roll"].range_max) == (0, 4095)


def test_joint_that_never_moved_fails_calibration():
    with FakeFeetechBus(arm_servos()) as fake:
        bus = FeetechBus(fake.port, timeout_s=0.2)
        bus.connect()
        with pytest.raises(CalibrationError, match="moved less"):
            calibrate_arm(bus, "right", IDS, ask=lambda _: "", stop_recording=lambda: True, poll_s=0.0)
        bus.close()


def test_lerobot_import_via_cli(tmp_path):
    lerobot = {f"arm_left_{j}": {"id": i + 1, "drive_mode": 0, "homing_offset": -10 * i, "range_min": 1000, "range_max": 3000}
               for i, j in enumerate(["shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw", "wrist_roll", "gripper"])}
    lerobot["base_left_wheel"] = {"id": 8, "drive_mode": 0, "homing_offset": 0, "range_min": 0, "range_max": 4095}
    src = tmp_path / "lerobot.json"
    src.write_text(json.dumps(lerobot))
    out = tmp_path / "cal.yaml"
    assert cli_main(["calibrate", "--out", str(out), "--from-lerobot", str(src), "--robot-id", "am2-007"]) == 0
    data = yaml.safe_load(out.read_text())
    cals = calibration_from_dict(data)
    assert data["robot_id"] == "am2-007" and len(cals) == 7
    assert cals["left_wrist_yaw_joint"].homing_offset == -40
