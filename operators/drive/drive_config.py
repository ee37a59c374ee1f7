"""Configuration of the drive nodes (base, lift, arm buses): drive.yaml as dataclasses.

Every value comes from the file (the driver's numbers live there, once); this
module only says what each section holds and checks it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.errors import ConfigError
from teledora.operators.config import config_from_mapping
from teledora.operators.drive.current_protection import CurrentProtectionConfig
from teledora.operators.drive.omni_drive import OmniDriveGeometry
from teledora.operators.drive.lift_axis import LiftAxisConfig

ARM_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw_joint", "wrist_roll", "gripper")


class DriveConfigError(ConfigError):
    """drive.yaml is missing a section or holds an invalid value."""


@dataclass(frozen=True)
class BaseDriveConfig:
    """Omni base: geometry, servo ids (left, back, right) and watchdog."""

    geometry: OmniDriveGeometry
    wheel_ids: tuple[int, int, int]
    watchdog_timeout_s: float


@dataclass(frozen=True)
class BusConfig:
    """One Feetech serial bus."""

    port: str
    baud_rate: int
    timeout_s: float


@dataclass(frozen=True)
class ArmsConfig:
    """Arm servos: id per joint (same on both buses), gripper mapping, position-loop
    gains (p, i, d) and the calibration file."""

    servo_ids: dict[str, int]
    gripper_closed_rad: float
    gripper_open_direction: int
    pid: tuple[int, int, int]
    calibration: str

    def __post_init__(self) -> None:
        if set(self.servo_ids) != set(ARM_JOINTS):
            raise DriveConfigError(f"servo_ids must name exactly {list(ARM_JOINTS)}")
        if self.gripper_open_direction not in (-1, 1):
            raise DriveConfigError(f"gripper_open_direction must be -1 or +1, got {self.gripper_open_direction}")


@dataclass(frozen=True)
class LiftSimConfig:
    """The simulated lift (sim variant of the lift node).

    Attributes:
        start_height_mm: Where the simulated axis starts, above the floor stop.
    """

    start_height_mm: float

    def __post_init__(self) -> None:
        v = self.start_height_mm
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
            raise DriveConfigError(f"lift_sim.start_height_mm must be a finite number >= 0, got {v!r}")


@dataclass(frozen=True)
class DriveConfig:
    """Everything in drive.yaml."""

    base: BaseDriveConfig
    lift: LiftAxisConfig
    buses: dict[str, BusConfig]
    arms: ArmsConfig
    current_protection: CurrentProtectionConfig
    lift_sim: LiftSimConfig

    def __post_init__(self) -> None:
        if self.lift_sim.start_height_mm > self.lift.soft_max_mm:
            raise DriveConfigError(f"lift_sim.start_height_mm ({self.lift_sim.start_height_mm:g}) is above "
                                   f"lift.soft_max_mm ({self.lift.soft_max_mm:g})")


def drive_config_from_dict(data: Mapping[str, Any]) -> DriveConfig:
    """Builds a :class:`DriveConfig` from parsed drive.yaml data.

    Raises:
        DriveConfigError: a section or key is missing or unknown, or a value is bad.
    """
    return config_from_mapping(DriveConfig, data, error=DriveConfigError)
