"""Lidar configuration (models/alohamini2/lidar.yaml) as dataclasses.

Parsing only: reading the file is the node's job. Mount poses are not part of
the configuration: they come from the model's sites (see
:mod:`teledora.operators.lidar.lidar_mounts`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from teledora.operators.errors import ConfigError
from teledora.operators.lidar.footprint import Footprint
from teledora.operators.lidar.scan_binning import ScanGrid
from teledora.operators.lidar.scan_merger import COMPENSATION_MODES


class LidarConfigError(ConfigError):
    """lidar.yaml is missing a key or holds a bad value."""


def _build(cls, data: Mapping[str, Any] | None, where: str):
    data = dict(data or {})
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise LidarConfigError(f"{where}: unknown keys {unknown}; known: {sorted(known)}")
    try:
        return cls(**data)
    except (TypeError, ValueError) as exc:
        raise LidarConfigError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class LidarUnitConfig:
    """One lidar: model site, frame name, serial port, start delay, sim rate."""

    site: str
    frame_id: str
    port: str = ""
    power_up_delay_s: float = 0.0
    sim_scan_rate_hz: float = 5.5

    def __post_init__(self) -> None:
        if not self.sim_scan_rate_hz > 0:
            raise ValueError("sim_scan_rate_hz must be > 0")
        if self.power_up_delay_s < 0:
            raise ValueError("power_up_delay_s must be >= 0")


@dataclass(frozen=True)
class HardwareConfig:
    """Serial driver settings shared by both RPLIDAR A1 units."""

    baudrate: int = 115200
    read_timeout_s: float = 1.0
    stop_settle_s: float = 0.15
    reset_settle_s: float = 2.0
    max_buffered_bytes: int = 3000
    max_restarts: int = 5
    min_samples_per_revolution: int = 50

    def __post_init__(self) -> None:
        if not self.read_timeout_s > 0:
            raise ValueError("read_timeout_s must be > 0")
        if self.stop_settle_s < 0.1:
            raise ValueError("stop_settle_s must be >= 0.1 (the A1 needs that long after STOP)")


@dataclass(frozen=True)
class SimLidarConfig:
    """Ray-cast lidar model: measurement rate, noise, dropouts."""

    samples_per_second: float = 2000.0
    range_noise_std_m: float = 0.005
    range_noise_fraction: float = 0.01
    dropout_probability: float = 0.01
    quality: int = 47
    seed: int = 0

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

    tolerance_s: float = 0.1
    silence_timeout_s: float = 0.5
    compensation: str = "per_ray"
    frame_id: str = "base_link"
    range_min_m: float = 0.0
    odom_max_age_s: float = 2.0
    odom_max_extrapolation_s: float = 0.2
    footprint: Footprint | None = None

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


def lidar_setup_from_dict(data: Mapping[str, Any]) -> LidarSetup:
    """Builds a :class:`LidarSetup` from the parsed YAML mapping.

    Raises:
        LidarConfigError: unknown keys, missing sections or bad values.
    """
    for key in ("model", "scene", "lidars"):
        if key not in data:
            raise LidarConfigError(f"lidar config: missing {key!r}")
    grid = _build(ScanGrid, data.get("grid"), "grid")
    lidars = {name: _build(LidarUnitConfig, d, f"lidars.{name}") for name, d in dict(data["lidars"]).items()}
    if not lidars:
        raise LidarConfigError("lidars: at least one lidar needed")
    merger_data = dict(data.get("merger") or {})
    fp = merger_data.pop("footprint", None)
    footprint = None
    if fp is not None:
        try:
            footprint = Footprint(fp["vertices_m"], padding_m=float(fp.get("padding_m", 0.0)))
        except (KeyError, ValueError, TypeError) as exc:
            raise LidarConfigError(f"merger.footprint: {exc}") from None
    merger = _build(MergerConfig, {**merger_data, "footprint": footprint}, "merger")
    return LidarSetup(
        model=str(data["model"]),
        scene=str(data["scene"]),
        grid=grid,
        lidars=lidars,
        hardware=_build(HardwareConfig, data.get("hardware"), "hardware"),
        sim=_build(SimLidarConfig, data.get("sim"), "sim"),
        merger=merger,
    )
