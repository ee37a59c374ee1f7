"""mocap.yaml as checked dataclasses: the NatNet client, the tracked rigid
body, the frame relations and the simulated rig."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.config import config_from_mapping
from teledora.operators.mocap.mocap_frames import MocapFrameConfig
from teledora.operators.mocap.mocap_simulator import MocapSimConfig


@dataclass(frozen=True)
class NatNetConfig:
    """Connection to OptiTrack Motive (the ``natnet`` section)."""

    server_address: str
    command_port: int
    local_address: str
    multicast: bool
    multicast_group: str
    data_port: int
    client_name: str
    natnet_version: tuple[int, int, int, int]
    connect_retry_s: float
    echo_period_s: float
    keepalive_period_s: float
    model_def_retry_s: float
    poll_s: float


@dataclass(frozen=True)
class RigidBodyConfig:
    """Which Motive rigid body is the robot: its streaming id (wins when set) or its name."""

    id: int | None
    name: str | None


@dataclass(frozen=True)
class MocapConfig:
    """Everything in mocap.yaml."""

    natnet: NatNetConfig
    rigid_body: RigidBodyConfig
    frame: MocapFrameConfig
    sim: MocapSimConfig

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "MocapConfig":
        """Builds the config from mocap.yaml's mapping, checked."""
        return config_from_mapping(cls, data)
