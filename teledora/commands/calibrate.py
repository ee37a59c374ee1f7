"""`teledora calibrate`: record one robot's arm servo calibration.

Per arm: torque off, the person puts the arm in the model's zero pose and
presses Enter (the servos' homing offsets are written so that pose reads
mid-scale), then moves every joint through its full range and presses Enter
again (the wrist roll turns fully and keeps 0..4095). The records are written
to a calibration YAML (merged with the other arm's records if the file
exists). ``--from-lerobot`` converts a LeRobot AlohaMini calibration JSON
instead of touching the hardware.
"""

from __future__ import annotations

import argparse
import json
import select
import sys
import time
from pathlib import Path
from typing import Callable

import yaml

from teledora.models.config_files import DRIVE, load_calibration, load_drive_config
from teledora.operators.config import config_from_mapping
from teledora.operators.drive.servo_calibration import (
    FULL_RANGE,
    CalibrationError,
    RangeRecorder,
    ServoCalibration,
    calibration_to_dict,
    half_turn_homing_offset,
)

FULL_TURN_JOINTS = ("wrist_roll",)
_LEROBOT_JOINTS = {"wrist_yaw": "wrist_yaw_joint"}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("calibrate", help="record arm servo calibration (offsets, ranges) to a YAML file",
                              description=__doc__)
    p.add_argument("--out", required=True, help="calibration YAML to write")
    p.add_argument("--robot-id", default="alohamini2")
    p.add_argument("--sides", default="left,right")
    p.add_argument("--config", default=DRIVE)
    p.add_argument("--left-port", default=None)
    p.add_argument("--right-port", default=None)
    p.add_argument("--from-lerobot", default=None, metavar="JSON", help="convert a LeRobot calibration file instead")
    p.set_defaults(func=run)


def _stdin_enter_pressed() -> bool:
    ready, _, _ = select.select([sys.stdin], [], [], 0)
    if ready:
        sys.stdin.readline()
        return True
    return False


def calibrate_arm(bus, side: str, servo_ids: dict[str, int], ask: Callable[[str], str] = input,
                  stop_recording: Callable[[], bool] = _stdin_enter_pressed, poll_s: float = 0.02) -> dict[str, ServoCalibration]:
    """Interactive calibration of one arm on a connected :class:`FeetechBus`."""
    joints = {f"{side}_{j}": sid for j, sid in servo_ids.items()}
    for sid in joints.values():
        bus.ping(sid)
        bus.write(sid, "Torque_Enable", 0)
        bus.write(sid, "Operating_Mode", 0)
    ask(f"Put the {side.upper()} arm in its zero pose (middle of each joint's range), then press Enter")
    offsets = {}
    for joint, sid in joints.items():
        actual = bus.read(sid, "Present_Position") + bus.read(sid, "Homing_Offset")
        offsets[joint] = half_turn_homing_offset(actual % 4096)
        bus.write(sid, "Lock", 0)
        bus.write(sid, "Homing_Offset", offsets[joint])
        bus.write(sid, "Lock", 1)
    limited = [j for j in joints if not j.endswith(FULL_TURN_JOINTS)]
    print(f"Move every {side} joint (except the wrist roll) through its full range; press Enter when done.")
    recorder = RangeRecorder(limited)
    while True:
        state = bus.sync_read([joints[j] for j in limited], ["Present_Position"])
        recorder.update({j: state[joints[j]]["Present_Position"] for j in limited})
        if stop_recording():
            break
        time.sleep(poll_s)
    ranges = recorder.ranges()
    return {
        j: ServoCalibration(sid, 0, offsets[j], *(ranges[j] if j in ranges else (0, FULL_RANGE)))
        for j, sid in joints.items()
    }


def from_lerobot(data: dict) -> dict[str, ServoCalibration]:
    """LeRobot AlohaMini calibration (``arm_left_shoulder_pan`` ...) in teledora joint names."""
    out = {}
    for name, rec in data.items():
        if not name.startswith("arm_"):
            continue  # wheels and lift need no calibration here
        side, _, joint = name[len("arm_"):].partition("_")
        joint = _LEROBOT_JOINTS.get(joint, joint)
        out[f"{side}_{joint}"] = config_from_mapping(ServoCalibration, rec, name, CalibrationError)
    return out


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    existing = {}
    if out.is_file():
        existing = load_calibration(out).servos
    if args.from_lerobot:
        cals = from_lerobot(json.loads(Path(args.from_lerobot).read_text()))
    else:
        from teledora.devices.drive.feetech_bus import FeetechBus

        config = load_drive_config(args.config)
        cals = {}
        for side in [s.strip() for s in args.sides.split(",") if s.strip()]:
            bus_cfg = config.buses[side]
            bus = FeetechBus(getattr(args, f"{side}_port") or bus_cfg.port, bus_cfg.baud_rate, bus_cfg.timeout_s)
            bus.connect()
            try:
                cals.update(calibrate_arm(bus, side, config.arms.servo_ids))
            finally:
                bus.close()
    merged = {**existing, **cals}
    out.write_text(yaml.safe_dump(calibration_to_dict(merged, args.robot_id), sort_keys=False))
    print(f"wrote {len(cals)} servo records to {out}")
    return 0
