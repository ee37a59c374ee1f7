"""estimation.yaml as one checked dataclass: flow sensor, its simulation (model
and image paths), the onboard EKF, the ArduPilot bridge and the ekf node's loop."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.config import config_from_mapping
from teledora.operators.errors import ConfigError
from teledora.operators.estimation.ardupilot_bridge_config import BridgeConfig
from teledora.operators.estimation.floor_image_flow import FloorCameraConfig
from teledora.operators.estimation.flow_model import FlowModelConfig
from teledora.operators.estimation.flow_sensor_sim import FlowSimConfig
from teledora.operators.estimation.planar_ekf import EkfConfig


@dataclass(frozen=True)
class FlowImageConfig:
    """The simulated sensor's image path: whether it is on, and its floor camera."""

    enabled: bool
    camera: FloorCameraConfig


@dataclass(frozen=True)
class EkfNodeConfig:
    """The ekf node's own loop (either variant).

    Attributes:
        gyro_publish_period_s: Onboard: after a gyro message a pose goes out
            when none has for this long of measurement time.
        mavlink_poll_s: ArduPilot: longest wait for an input before the
            MAVLink link is polled.
    """

    gyro_publish_period_s: float
    mavlink_poll_s: float

    def __post_init__(self) -> None:
        for name in ("gyro_publish_period_s", "mavlink_poll_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ConfigError(f"ekf_node.{name} must be a finite number > 0, got {value!r}")


@dataclass(frozen=True)
class EstimationConfig:
    """Everything in estimation.yaml."""

    flow_sensor: FlowModelConfig
    flow_sim: FlowSimConfig
    flow_image: FlowImageConfig
    ekf: EkfConfig
    ardupilot: BridgeConfig
    ekf_node: EkfNodeConfig

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "EstimationConfig":
        """Builds the config from estimation.yaml's mapping, checked."""
        return config_from_mapping(cls, data)
