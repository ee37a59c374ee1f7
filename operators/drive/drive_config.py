"""Configuration of the drive nodes (base, lift, arm buses), parsed from drive.yaml data."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from teledora.operators.errors import ConfigError
from teledora.operators.drive.current_protection import CurrentProtectionConfig
from teledora.operators.drive.omni_drive import OmniDriveGeometry
from teledora.operators.drive.lift_axis import LiftAxisConfig

ARM_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw_joint", "wrist_roll", "gripper")


class DriveConfigError(ConfigError):
    """drive.yaml is missing a section or holds an invalid value."""


@dataclass(frozen=True)
class BaseDriveConfig:
    """Omni base: geometry, servo ids and watchdog."""

    geometry: OmniDriveGeometry = field(default_factory=OmniDriveGeometry)
    wheel_ids: tuple[int, int, int] = (8, 9, 10)
    watchdog_timeout_s: float = 1.0
    odom_frame: str = "odom"
    base_frame: str = "base_link"


@dataclass(frozen=True)
class BusConfig:
    """One Feetech serial bus."""

    port: str
    baud_rate: int = 1_000_000
    timeout_s: float = 0.02


@dataclass(frozen=True)
class ArmsConfig:
    """Arm servos: id per joint (same on both buses) and gripper mapping."""

    servo_ids: dict[str, int] = field(default_factory=lambda: {j: i + 1 for i, j in enumerate(ARM_JOINTS)})
    gripper_closed_rad: float = 0.7
    gripper_open_direction: int = 1
    pid: tuple[int, int, int] = (16, 0, 32)
    calibration: str = "alohamini2/calibration.yaml"


@dataclass(frozen=True)
class DriveConfig:
    base: BaseDriveConfig
    lift: LiftAxisConfig
    buses: dict[str, BusConfig]
    arms: ArmsConfig
    current_protection: CurrentProtectionConfig


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    sec = data.get(name)
    if not isinstance(sec, Mapping):
        raise DriveConfigError(f"drive config: missing section {name!r}")
    return sec


def _only(sec: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(sec) - allowed)
    if unknown:
        raise DriveConfigError(f"drive config {where}: unknown keys {unknown}")


def drive_config_from_dict(data: Mapping[str, Any]) -> DriveConfig:
    """Builds a :class:`DriveConfig` from parsed drive.yaml data.

    Raises:
        DriveConfigError: a section is missing or holds unknown keys / bad values.
    """
    try:
        b = _section(data, "base")
        _only(b, {"wheel_radius_m", "base_radius_m", "wheel_angles_deg", "ticks_per_rev", "max_wheel_ticks_s",
                  "wheel_ids", "watchdog_timeout_s", "odom_frame", "base_frame"}, "base")
        geometry = OmniDriveGeometry(
            wheel_radius_m=float(b["wheel_radius_m"]),
            base_radius_m=float(b["base_radius_m"]),
            wheel_angles_deg=tuple(int(a) for a in b["wheel_angles_deg"]),
            ticks_per_rev=float(b["ticks_per_rev"]),
            max_wheel_ticks_s=float(b["max_wheel_ticks_s"]),
        )
        ids = b["wheel_ids"]
        base = BaseDriveConfig(
            geometry=geometry,
            wheel_ids=(int(ids["left"]), int(ids["back"]), int(ids["right"])),
            watchdog_timeout_s=float(b["watchdog_timeout_s"]),
            odom_frame=str(b.get("odom_frame", "odom")),
            base_frame=str(b.get("base_frame", "base_link")),
        )
        lift = LiftAxisConfig.from_dict(_section(data, "lift"))
        buses = {}
        for name, bus in _section(data, "buses").items():
            _only(bus, {f.name for f in fields(BusConfig)}, f"buses.{name}")
            buses[str(name)] = BusConfig(str(bus["port"]), int(bus.get("baud_rate", 1_000_000)), float(bus.get("timeout_s", 0.02)))
        a = _section(data, "arms")
        _only(a, {f.name for f in fields(ArmsConfig)}, "arms")
        servo_ids = {str(k): int(v) for k, v in a["servo_ids"].items()}
        if set(servo_ids) != set(ARM_JOINTS):
            raise DriveConfigError(f"arms.servo_ids must name exactly {list(ARM_JOINTS)}")
        pid = a.get("pid", {"p": 16, "i": 0, "d": 32})
        arms = ArmsConfig(
            servo_ids=servo_ids,
            gripper_closed_rad=float(a.get("gripper_closed_rad", 0.7)),
            gripper_open_direction=int(a.get("gripper_open_direction", 1)),
            pid=(int(pid["p"]), int(pid["i"]), int(pid["d"])),
            calibration=str(a.get("calibration", "alohamini2/calibration.yaml")),
        )
        protection = CurrentProtectionConfig.from_dict(_section(data, "current_protection"))
    except (KeyError, TypeError) as exc:
        raise DriveConfigError(f"drive config: missing or malformed value ({exc})") from None
    except ValueError as exc:
        if isinstance(exc, DriveConfigError):
            raise
        raise DriveConfigError(f"drive config: {exc}") from None
    return DriveConfig(base=base, lift=lift, buses=buses, arms=arms, current_protection=protection)
