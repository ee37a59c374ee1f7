"""Per-robot servo calibration: raw 12-bit positions <-> joint angles.

Each servo has the LeRobot-style record ``id, drive_mode, homing_offset,
range_min, range_max``. The homing offset lives in the servo (it reports
``actual - offset``) and is chosen at calibration so the pose the arm held
then (the model's zero pose) reads mid-range. Joint angles follow LeRobot's
degree convention, so a LeRobot calibration maps to the same angles::

    q_rad = radians((raw - mid) * 360 / 4095) * (+1, or -1 when drive_mode is 1)
    mid   = (range_min + range_max) / 2

The gripper is mapped linearly over its recorded range onto the model's
closure angle: 0 rad at the open end, ``closed_rad`` at the closed end.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Mapping

from teledora.operators.errors import ConfigError
from teledora.operators.config import config_from_mapping

FULL_RANGE = 4095  # LeRobot's max resolution for 12-bit servos
HALF_TURN = 2047


class CalibrationError(ConfigError):
    """A calibration record is malformed, or a value cannot be mapped."""


@dataclass(frozen=True)
class ServoCalibration:
    """One servo's calibration record (raw units)."""

    id: int
    drive_mode: int
    homing_offset: int
    range_min: int
    range_max: int

    def __post_init__(self) -> None:
        if not 0 <= self.id <= 253:
            raise CalibrationError(f"servo id {self.id} out of range")
        if self.drive_mode not in (0, 1):
            raise CalibrationError(f"servo {self.id}: drive_mode must be 0 or 1")
        if not 0 <= self.range_min < self.range_max <= FULL_RANGE:
            raise CalibrationError(f"servo {self.id}: need 0 <= range_min < range_max <= {FULL_RANGE}")
        if abs(self.homing_offset) >= 2048:
            raise CalibrationError(f"servo {self.id}: homing_offset {self.homing_offset} does not fit 11 bits")

    @property
    def mid(self) -> float:
        return (self.range_min + self.range_max) / 2.0


def joint_rad_from_raw(cal: ServoCalibration, raw: float) -> float:
    """Joint angle (rad) from a present position (raw, offset applied by the servo)."""
    deg = (raw - cal.mid) * 360.0 / FULL_RANGE
    return math.radians(-deg if cal.drive_mode else deg)


def joint_raw_from_rad(cal: ServoCalibration, q_rad: float) -> int:
    """Goal position (raw) for a joint angle, clamped to the recorded range."""
    if not math.isfinite(q_rad):
        raise CalibrationError(f"servo {cal.id}: joint target must be finite, got {q_rad!r}")
    deg = math.degrees(-q_rad if cal.drive_mode else q_rad)
    raw = max(float(cal.range_min), min(float(cal.range_max), deg * FULL_RANGE / 360.0 + cal.mid))  # clamps inf too
    return int(round(raw))


def joint_range_rad(cal: ServoCalibration) -> tuple[float, float]:
    """The joint angles (rad, lower first) at the two ends of the recorded range."""
    a, b = joint_rad_from_raw(cal, cal.range_min), joint_rad_from_raw(cal, cal.range_max)
    return (a, b) if a <= b else (b, a)


def joint_velocity_rad_s(cal: ServoCalibration, raw_velocity: int) -> float:
    """Joint velocity (rad/s) from the servo's present velocity (ticks/s)."""
    v = raw_velocity * 2.0 * math.pi / 4096.0
    return -v if cal.drive_mode else v


def gripper_rad_from_raw(cal: ServoCalibration, raw: float, closed_rad: float, open_direction: int) -> float:
    """Gripper closure (rad, 0 = open) from a raw position; ``open_direction`` +1 means raw up opens."""
    frac_open = (raw - cal.range_min) / (cal.range_max - cal.range_min)
    if open_direction < 0:
        frac_open = 1.0 - frac_open
    return (1.0 - min(1.0, max(0.0, frac_open))) * closed_rad


def gripper_raw_from_rad(cal: ServoCalibration, closure_rad: float, closed_rad: float, open_direction: int) -> int:
    """Goal position (raw) for a gripper closure angle, clamped to the recorded range."""
    if not math.isfinite(closure_rad):
        raise CalibrationError(f"servo {cal.id}: gripper target must be finite, got {closure_rad!r}")
    frac_open = 1.0 - min(1.0, max(0.0, closure_rad / closed_rad))
    if open_direction < 0:
        frac_open = 1.0 - frac_open
    return int(round(cal.range_min + frac_open * (cal.range_max - cal.range_min)))


def half_turn_homing_offset(present_actual_raw: int) -> int:
    """Homing offset that makes the current pose read mid-scale (2047)."""
    return int(present_actual_raw) - HALF_TURN


class RangeRecorder:
    """Keeps the min/max raw position seen per joint while a person moves the arm."""

    def __init__(self, joints: Iterable[str]) -> None:
        self.mins: dict[str, int] = {}
        self.maxs: dict[str, int] = {}
        self.joints = list(joints)

    def update(self, positions: Mapping[str, int]) -> None:
        for j in self.joints:
            if j in positions:
                v = int(positions[j])
                self.mins[j] = min(self.mins.get(j, v), v)
                self.maxs[j] = max(self.maxs.get(j, v), v)

    def ranges(self, min_span: int = 20) -> dict[str, tuple[int, int]]:
        """Recorded (min, max) per joint.

        Raises:
            CalibrationError: a joint was never seen or barely moved.
        """
        out = {}
        for j in self.joints:
            if j not in self.mins or self.maxs[j] - self.mins[j] < min_span:
                raise CalibrationError(f"{j}: moved less than {min_span} ticks; move it through its full range")
            out[j] = (self.mins[j], self.maxs[j])
        return out


@dataclass(frozen=True)
class CalibrationFile:
    """A calibration file: one record per joint, and the robot it was recorded on."""

    servos: dict[str, ServoCalibration]
    robot_id: str = ""  # a LeRobot calibration JSON does not say

    def __post_init__(self) -> None:
        if not self.servos:
            raise CalibrationError("servos: no records")


def calibration_file_from_dict(data: Mapping[str, Any]) -> CalibrationFile:
    """Parses ``{"robot_id": ..., "servos": {joint: {id, drive_mode, homing_offset,
    range_min, range_max}}}`` (a LeRobot calibration JSON, which has no ``servos``
    level, is accepted too).

    Raises:
        CalibrationError: a missing, unknown or out-of-range value.
    """
    if "servos" not in data:
        data = {"servos": data}
    return config_from_mapping(CalibrationFile, data, error=CalibrationError)


def calibration_from_dict(data: Mapping[str, Any]) -> dict[str, ServoCalibration]:
    """The records of :func:`calibration_file_from_dict`, by joint name."""
    return calibration_file_from_dict(data).servos


def calibration_to_dict(cals: Mapping[str, ServoCalibration], robot_id: str) -> dict[str, Any]:
    return {"robot_id": robot_id, "servos": {n: asdict(c) for n, c in cals.items()}}
