"""Simulated optical-flow sensor and gyro driven by ground-truth base motion.

Turns the true body twist into what the real parts report: flow rates in the
sensor's own axes (mounting offset and yaw, gain error, noise), a quality that
collapses when the sensor loses track (random dropouts, rates past saturation),
the ground distance from the mount height, and a gyro with noise and bias. The
flow is averaged over the integration interval, as a real sensor integrates
between reports. A seeded generator makes every run reproducible.

Latency (``delay_ms``, like ArduPilot SITL's SIM_FLOW_DELAY): a report made at
host time ``t`` describes the motion up to ``t - delay``; it averages the
ground-truth samples stamped in ``(t_prev - delay, t - delay]``, where ``t_prev``
is the previous report. The gyro stands for the autopilot's IMU and is not
delayed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np

from teledora.operators.errors import ConfigError, TeledoraError
from teledora.operators.config import config_from_mapping
from teledora.operators.estimation.delay_line import DelayLine, DelayLineError
from teledora.operators.estimation.flow_model import FlowModel


class FlowSimConfigError(ConfigError):
    """A flow-sensor simulation setting is unusable."""


class FlowSimNotReady(TeledoraError, ValueError):
    """No ground truth is old enough yet to make a report (none received, or all inside the delay)."""


MAX_DELAY_MS = 1000.0


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
        delay_ms: Report latency: a report describes the motion this long before it is made.
        report_rate_hz: Reports a second, on the ground truth's clock.
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
    delay_ms: float
    report_rate_hz: float
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
        if not self.report_rate_hz > 0.0:
            raise FlowSimConfigError(f"report_rate_hz must be > 0, got {self.report_rate_hz}")
        if not 0.0 <= self.delay_ms <= MAX_DELAY_MS:
            raise FlowSimConfigError(f"delay_ms must be within 0..{MAX_DELAY_MS:g}, got {self.delay_ms}")
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
        self._truth: DelayLine[np.ndarray] = DelayLine(round(config.delay_ms * 1e6))
        self._last_twist: np.ndarray | None = None
        self._last_read_ns: int | None = None
        self.dropouts = 0

    def add_truth(self, stamp_ns: int, vx: float, vy: float, wz: float) -> None:
        """Records the ground-truth body twist (m/s, m/s, rad/s) at instant ``stamp_ns``.

        Raises:
            FlowSimConfigError: the sample is older than one already recorded.
        """
        try:
            self._truth.push(int(stamp_ns), np.array([vx, vy, wz], dtype=float))
        except DelayLineError as exc:
            raise FlowSimConfigError(str(exc)) from None
        self._last_twist = np.array([vx, vy, wz], dtype=float)

    @property
    def has_truth(self) -> bool:
        """True once any ground truth arrived."""
        return self._last_twist is not None

    def ready(self, stamp_ns: int) -> bool:
        """True when a report at ``stamp_ns`` has ground truth to describe (older than the delay)."""
        return self._truth.has_output(int(stamp_ns))

    def read_flow(self, stamp_ns: int) -> FlowReading:
        """The report made at ``stamp_ns``: the twist averaged over the samples that came out of
        the delay since the previous report (the last one held when none did).

        Raises:
            FlowSimNotReady: no ground truth is older than the delay yet.
        """
        released = self._truth.release(int(stamp_ns))
        if self._truth.latest is None:
            raise FlowSimNotReady("no ground truth older than the report delay yet")
        twist = np.mean([v for _, v in released], axis=0) if released else self._truth.latest[1]
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
