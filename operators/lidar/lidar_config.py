"""Lidar configuration (models/alohamini2/lidar.yaml) as dataclasses.

Parsing only: reading the file is ``teledora.models.config_files``'s job. Mount poses are not part of
the configuration: they come from the model's sites (see
:mod:`teledora.operators.lidar.lidar_mounts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.errors import ConfigError
from teledora.operators.config import config_from_mapping
from teledora.operators.lidar.footprint import Footprint
from teledora.operators.lidar.scan_binning import ScanGrid
from teledora.operators.lidar.scan_merger import COMPENSATION_MODES


class LidarConfigError(ConfigError):
    """lidar.yaml is missing a key or holds a bad value."""


@dataclass(frozen=True)
class LidarUnitConfig:
    """One lidar: model site, frame name, serial port, start delay, sim rate."""

    site: str
    frame_id: str
    port: str
    power_up_delay_s: float
    sim_scan_rate_hz: float

    def __post_init__(self) -> None:
        if not self.sim_scan_rate_hz > 0:
            raise ValueError("sim_scan_rate_hz must be > 0")
        if self.power_up_delay_s < 0:
            raise ValueError("power_up_delay_s must be >= 0")


@dataclass(frozen=True)
class HardwareConfig:
    """Serial driver settings shared by both RPLIDAR A1 units."""

    baudrate: int
    read_timeout_s: float
    stop_settle_s: float
    reset_settle_s: float
    max_buffered_bytes: int
    min_samples_per_revolution: int

    def __post_init__(self) -> None:
        if not self.read_timeout_s > 0:
            raise ValueError("read_timeout_s must be > 0")
        if self.stop_settle_s < 0.1:
            raise ValueError("stop_settle_s must be >= 0.1 (the A1 needs that long after STOP)")


@dataclass(frozen=True)
class SimLidarConfig:
    """Ray-cast lidar model: measurement rate, noise, dropouts."""

    samples_per_second: float
    range_noise_std_m: float
    range_noise_fraction: float
    dropout_probability: float
    quality: int
    seed: int

    def __post_init__(self) -> None:
        if not self.samples_per_second > 0:
            raise ValueError("samples_per_second must be > 0")
        if not 0.0 <= self.dropout_probability < 1.0:
            raise ValueError("dropout_probability must be in [0, 1)")
        if self.range_noise_std_m < 0 or self.range_noise_fraction < 0:
            raise ValueError("noise must be >= 0")


@dataclass(frozen=True)
class MergerConfig:
    """Scan merger settings."""

    tolerance_s: float
    silence_timeout_s: float
    compensation: str
    frame_id: str
    range_min_m: float
    odom_max_age_s: float
    odom_max_extrapolation_s: float
    footprint: Footprint | None  # null keeps every return

    def __post_init__(self) -> None:
        if self.compensation not in COMPENSATION_MODES:
            raise ValueError(f"compensation must be one of {COMPENSATION_MODES}")
        if not self.tolerance_s >= 0 or not self.silence_timeout_s > 0:
            raise ValueError("tolerance_s must be >= 0 and silence_timeout_s > 0")


@dataclass(frozen=True)
class LidarSetup:
    """Everything in lidar.yaml."""

    model: str
    scene: str
    grid: ScanGrid
    lidars: dict[str, LidarUnitConfig]
    hardware: HardwareConfig
    sim: SimLidarConfig
    merger: MergerConfig

    def __post_init__(self) -> None:
        if not self.lidars:
            raise LidarConfigError("lidars: at least one lidar needed")


def lidar_setup_from_dict(data: Mapping[str, Any]) -> LidarSetup:
    """Builds a :class:`LidarSetup` from the parsed YAML mapping.

    Raises:
        LidarConfigError: unknown or missing keys, or bad values.
    """
    return config_from_mapping(LidarSetup, data, error=LidarConfigError)
