"""estimation.yaml as one checked dataclass: flow sensor, its simulation (model
and image paths), the onboard EKF and the ArduPilot bridge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.config import config_from_mapping
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
class EstimationConfig:
    """Everything in estimation.yaml."""

    flow_sensor: FlowModelConfig
    flow_sim: FlowSimConfig
    flow_image: FlowImageConfig
    ekf: EkfConfig
    ardupilot: BridgeConfig

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "EstimationConfig":
        """Builds the config from estimation.yaml's mapping, checked."""
        return config_from_mapping(cls, data)
