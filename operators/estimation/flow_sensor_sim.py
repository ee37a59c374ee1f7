"""Simulated optical-flow sensor and gyro driven by ground-truth base motion.

Turns the true body twist into what the real parts report: flow rates in the
sensor's own axes (mounting offset and yaw, gain error, noise), a quality that
collapses when the sensor loses track (random dropouts, rates past saturation),
the ground distance from the mount height, and a gyro with noise and bias. The
flow is averaged over the integration interval, as a real sensor integrates
between reports. A seeded generator makes every run reproducible.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np

from teledora.operators.errors import ConfigError
from teledora.operators.config import config_from_mapping
from teledora.operators.estimation.flow_model import FlowModel


class FlowSimConfigError(ConfigError):
    """A flow-sensor simulation setting is unusable."""


@dataclass(frozen=True)
class FlowSimConfig:
    """Imperfections of the simulated sensor.

    Args:
        flow_noise_rad_s: Std of white noise on each flow rate.
        gain_x, gain_y: Sensor gain error (1.0 = perfect); FLOW_FXSCALER corrects it.
        height_noise_m: Std of the reported ground distance.
        quality_nominal: Quality reported while tracking.
        quality_lost: Quality reported while the sensor has lost track.
        dropout_probability: Chance that one report is a dropout (lost track).
        saturation_rad_s: Flow rate beyond which the sensor loses track.
        gyro_noise_rad_s: Std of white noise on each gyro axis.
        gyro_bias_rad_s: Constant yaw-rate bias of the gyro.
        seed: Random seed.
    """

    flow_noise_rad_s: float
    gain_x: float
    gain_y: float
    height_noise_m: float
    quality_nominal: int
    quality_lost: int
    dropout_probability: float
    saturation_rad_s: float
    gyro_noise_rad_s: float
    gyro_bias_rad_s: float
    seed: int

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not (isinstance(v, (int, float)) and math.isfinite(v)):
                raise FlowSimConfigError(f"{f.name} must be a finite number, got {v!r}")
        if not 0.0 <= self.dropout_probability <= 1.0:
            raise FlowSimConfigError(f"dropout_probability must be within 0..1, got {self.dropout_probability}")
        if self.gain_x <= 0.0 or self.gain_y <= 0.0:
            raise FlowSimConfigError("gain_x and gain_y must be > 0")
        for name in ("quality_nominal", "quality_lost"):
            if not 0 <= getattr(self, name) <= 255:
                raise FlowSimConfigError(f"{name} must be within 0..255")

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any]) -> "FlowSimConfig":
        """Builds a config from the ``flow_sim`` section of estimation.yaml."""
        return config_from_mapping(cls, cfg, "flow_sim", FlowSimConfigError)


@dataclass(frozen=True)
class FlowReading:
    """One report of the flow sensor (sensor axes, before the autopilot's scalers)."""

    stamp_ns: int
    flow_rate_x: float
    flow_rate_y: float
    quality: int
    ground_distance_m: float
    integration_time_s: float


class FlowSensorSim:
    """Produces flow and gyro reports from ground truth.

    Args:
        model: The true mounting of the sensor (offset, yaw; its scalers are ignored).
        config: Noise, gain and dropout settings.
    """

    def __init__(self, model: FlowModel, config: FlowSimConfig) -> None:
        self.model = model
        self.config = config
        self._rng = np.random.default_rng(config.seed)
        self._sum = np.zeros(3)
        self._count = 0
        self._last_twist: np.ndarray | None = None
        self._last_read_ns: int | None = None
        self.dropouts = 0

    def add_truth(self, vx: float, vy: float, wz: float) -> None:
        """Records one ground-truth body twist sample (m/s, m/s, rad/s)."""
        twist = np.array([vx, vy, wz], dtype=float)
        self._sum += twist
        self._count += 1
        self._last_twist = twist

    @property
    def has_truth(self) -> bool:
        """True once any ground truth arrived."""
        return self._last_twist is not None

    def read_flow(self, stamp_ns: int) -> FlowReading:
        """The report at ``stamp_ns``: the twist averaged since the previous report.

        Raises:
            FlowSimConfigError: no ground truth has been received yet.
        """
        if self._last_twist is None:
            raise FlowSimConfigError("no ground truth yet")
        twist = self._sum / self._count if self._count else self._last_twist
        self._sum[:] = 0.0
        self._count = 0
        dt = 0.0 if self._last_read_ns is None else max(0.0, (stamp_ns - self._last_read_ns) * 1e-9)
        self._last_read_ns = int(stamp_ns)
        c = self.config
        height = self.model.config.offset_m[2]
        body = self.model.body_flow(twist[0], twist[1], twist[2], height)
        # The sensor sees the floor in its own axes; its gain error multiplies the reading.
        raw = self.model.sensor_flow(body) * np.array([c.gain_x, c.gain_y])
        raw = raw + self._rng.normal(0.0, c.flow_noise_rad_s, 2)
        lost = self._rng.random() < c.dropout_probability or float(np.max(np.abs(body))) > c.saturation_rad_s
        if lost:
            self.dropouts += 1
            raw = np.zeros(2)
            quality = int(c.quality_lost)
        else:
            quality = int(c.quality_nominal)
        ground = max(0.0, height + float(self._rng.normal(0.0, c.height_noise_m)))
        return FlowReading(int(stamp_ns), float(raw[0]), float(raw[1]), quality, ground, dt)

    def read_gyro(self, wz: float | None = None) -> np.ndarray:
        """Body angular velocity (FLU, rad/s) with noise; yaw rate from ``wz`` or the latest truth."""
        if wz is None:
            if self._last_twist is None:
                raise FlowSimConfigError("no ground truth yet")
            wz = float(self._last_twist[2])
        c = self.config
        noise = self._rng.normal(0.0, c.gyro_noise_rad_s, 3)
        return np.array([0.0, 0.0, wz + c.gyro_bias_rad_s]) + noise
