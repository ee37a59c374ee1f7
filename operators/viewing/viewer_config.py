"""viewer.yaml: where the live view goes, and how much of each stream it shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.config import config_from_mapping
from teledora.operators.errors import ConfigError

OUTPUTS = ("auto", "spawn", "serve", "save")


@dataclass(frozen=True)
class ViewRates:
    """Most messages per second shown of each stream class, by message stamp
    (0 shows every message). Messages in between are skipped, never queued."""

    robot_hz: float
    scans_hz: float
    images_hz: float
    scalars_hz: float
    trajectories_hz: float
    diagnostics_hz: float

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value < 0:
                raise ConfigError(f"rates_hz.{name} must be >= 0, got {value}")


@dataclass(frozen=True)
class RobotSources:
    """The topic (``node__output``) that sets each joint group of the shown robot."""

    arms: str
    lift: str
    base: str


@dataclass(frozen=True)
class ViewerConfig:
    """The ``viewer`` node's and ``teledora view``'s settings.

    Attributes:
        output: ``spawn`` a native Rerun viewer, ``serve`` the web viewer,
            ``save`` an .rrd file, or ``auto`` (spawn with a display, else save).
        grpc_port: Port of the Rerun gRPC server when serving.
        web_port: Port of the web viewer's page when serving.
        rates_hz: Decimation per stream class.
        trajectory_max_points: Points kept of each trajectory (oldest dropped).
        robot_sources: Which topic moves which part of the shown robot.
    """

    output: str
    grpc_port: int
    web_port: int
    rates_hz: ViewRates
    trajectory_max_points: int
    robot_sources: RobotSources

    def __post_init__(self) -> None:
        if self.output not in OUTPUTS:
            raise ConfigError(f"output must be one of {OUTPUTS}, got {self.output!r}")
        if self.trajectory_max_points < 2:
            raise ConfigError("trajectory_max_points must be >= 2")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "ViewerConfig":
        return config_from_mapping(cls, data)
