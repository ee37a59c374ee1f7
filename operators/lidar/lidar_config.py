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
from teledora.operators.lidar.outlier_filter import OutlierFilterConfig
from teledora.operators.lidar.scan_binning import ScanGrid
from teledora.operators.lidar.scan_merger import COMPENSATION_MODES, RESAMPLING_METHODS


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
    max_samples_per_revolution: int
    min_scan_rate_hz: float
    revolution_timeout_s: float
    max_restarts: int
    max_angle_step_deg: float
    max_angle_backstep_deg: float
    sample_clock_window_s: float

    def __post_init__(self) -> None:
        if not self.read_timeout_s > 0:
            raise ValueError("read_timeout_s must be > 0")
        if self.stop_settle_s < 0.1:
            raise ValueError("stop_settle_s must be >= 0.1 (the A1 needs that long after STOP)")
        if not 1 <= self.min_samples_per_revolution < self.max_samples_per_revolution:
            raise ValueError("need 1 <= min_samples_per_revolution < max_samples_per_revolution")
        if not self.min_scan_rate_hz > 0:
            raise ValueError("min_scan_rate_hz must be > 0")
        if not self.revolution_timeout_s > 1.0 / self.min_scan_rate_hz:
            raise ValueError("revolution_timeout_s must exceed one turn at min_scan_rate_hz")
        if self.max_restarts < 0:
            raise ValueError("max_restarts must be >= 0")
        if not 0 < self.max_angle_step_deg < 180 or not 0 <= self.max_angle_backstep_deg < 180:
            raise ValueError("max_angle_step_deg must be in (0, 180) and max_angle_backstep_deg in [0, 180)")
        if not self.sample_clock_window_s > 0.1:
            raise ValueError("sample_clock_window_s must be > 0.1")


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
    range_min_m: float
    odom_max_age_s: float
    odom_max_extrapolation_s: float
    footprint: Footprint | None  # null keeps every return
    self_filter_padding_m: float | None  # null: no self-filter from the robot model
    resampling: str
    max_gap_deg: float
    breakpoint_angle_deg: float
    breakpoint_noise_m: float
    history_max_age_s: float

    def __post_init__(self) -> None:
        if self.compensation not in COMPENSATION_MODES:
            raise ValueError(f"compensation must be one of {COMPENSATION_MODES}")
        if self.resampling not in RESAMPLING_METHODS:
            raise ValueError(f"resampling must be one of {RESAMPLING_METHODS}")
        if not 0.0 < self.breakpoint_angle_deg < 90.0 or self.max_gap_deg < 0 or self.breakpoint_noise_m < 0:
            raise ValueError("need 0 < breakpoint_angle_deg < 90, max_gap_deg >= 0, breakpoint_noise_m >= 0")
        if self.history_max_age_s < 0 or (self.self_filter_padding_m is not None and self.self_filter_padding_m < 0):
            raise ValueError("history_max_age_s and self_filter_padding_m must be >= 0")
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
    outlier_filter: OutlierFilterConfig | None  # null: every ray is published as measured

    def __post_init__(self) -> None:
        if not self.lidars:
            raise LidarConfigError("lidars: at least one lidar needed")


def lidar_setup_from_dict(data: Mapping[str, Any]) -> LidarSetup:
    """Builds a :class:`LidarSetup` from the parsed YAML mapping.

    Raises:
        LidarConfigError: unknown or missing keys, or bad values.
    """
    return config_from_mapping(LidarSetup, data, error=LidarConfigError)
