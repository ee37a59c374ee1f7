"""The ArduPilot bridge's settings: the ``ardupilot`` section of estimation.yaml.

The section is flat: the link session's timings sit next to the bridge's own
keys, and ``message_interval_s`` / ``status_interval_s`` give the periods of
the streams the bridge requests; :class:`BridgeConfig` gathers them into its
:attr:`BridgeConfig.session`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from teledora.operators.config import config_from_mapping
from teledora.operators.estimation.autopilot_session import SessionConfig
from teledora.operators.estimation.distance_sensor import covariance_cm2

MSG_ATTITUDE, MSG_LOCAL_POSITION_NED, MSG_EKF_STATUS_REPORT = 30, 32, 193


def bridge_streams(message_interval_s: float, status_interval_s: float) -> dict[int, float]:
    """The streams the bridge requests (message id -> period s): pose and attitude, EKF status."""
    return {MSG_LOCAL_POSITION_NED: message_interval_s, MSG_ATTITUDE: message_interval_s,
            MSG_EKF_STATUS_REPORT: status_interval_s}


@dataclass(frozen=True)
class BridgeConfig:
    """The ``ardupilot`` section of estimation.yaml (docs/estimation.md explains each key)."""

    connection: str
    baud: int
    source_system: int
    source_component: int
    heartbeat_timeout_s: float
    link_timeout_s: float
    reconnect_delay_s: float
    heartbeat_period_s: float
    timesync_period_s: float
    retry_period_s: float
    origin_wait_s: float
    set_origin: bool
    stream_timeout_s: float
    send_distance_sensor: bool
    distance_sensor_range_m: tuple[float, float]
    distance_sensor_std_m: float | None
    message_interval_s: float
    status_interval_s: float
    origin_lat_deg: float
    origin_lon_deg: float
    origin_alt_m: float
    position_std_m: float
    yaw_std_rad: float
    lost_position_std_m: float
    session: SessionConfig = field(init=False)

    def __post_init__(self) -> None:
        low, high = (float(v) for v in self.distance_sensor_range_m)
        if not 0.0 <= low < high:
            raise ValueError(f"distance_sensor_range_m must be [min, max] with 0 <= min < max (m), got "
                             f"{list(self.distance_sensor_range_m)}")
        object.__setattr__(self, "distance_sensor_range_m", (low, high))
        covariance_cm2(self.distance_sensor_std_m)  # raises on an unusable value
        object.__setattr__(self, "session", SessionConfig(
            heartbeat_timeout_s=self.heartbeat_timeout_s, link_timeout_s=self.link_timeout_s,
            reconnect_delay_s=self.reconnect_delay_s, heartbeat_period_s=self.heartbeat_period_s,
            timesync_period_s=self.timesync_period_s, retry_period_s=self.retry_period_s,
            origin_wait_s=self.origin_wait_s, set_origin=self.set_origin, stream_timeout_s=self.stream_timeout_s,
            streams=bridge_streams(self.message_interval_s, self.status_interval_s),
        ))

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any]) -> "BridgeConfig":
        """Builds the config from the ``ardupilot`` section, checked."""
        return config_from_mapping(cls, cfg, "ardupilot")
