"""Planar extended Kalman filter for a ground base: optical flow, gyro and wheel odometry.

State ``[x, y, yaw, vx, vy, wz, gyro_bias]``: position and heading in the odom
frame (z up), velocity in the body frame (FLU), yaw rate and the gyro's yaw-rate
bias (a slow random walk; observable only when wheel odometry is fused — flow
alone cannot tell a yaw rate from a sideways velocity). The motion model is constant body
twist driven by white acceleration noise; position is integrated with the heading
at the middle of each step, so a pure spin does not leak into position.

Measurements:

* flow rates about the body x/y axes (ArduPilot convention, see
  :mod:`teledora.operators.estimation.flow_model`), linear in ``(vx, vy, wz)`` once the height
  is known. With the sensor's mounting offset in the model, a spin in place is
  recognised as rotation; without it, the apparent sensor velocity is integrated
  as translation;
* gyro yaw rate (``wz + gyro_bias``);
* wheel-odometry body twist ``(vx, vy, wz)``.

Time is passed in (``stamp_ns``); nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any, Mapping

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import ConfigError, TeledoraError
from teledora.operators.config import config_from_mapping
from teledora.operators.estimation.flow_model import FlowModel
from teledora.operators.geometry import wrap_angle

STATE_NAMES = ("x", "y", "yaw", "vx", "vy", "wz", "gyro_bias")
_X, _Y, _YAW, _VX, _VY, _WZ, _BG = range(7)
_N = 7


class EkfConfigError(ConfigError):
    """An EKF configuration value is unusable."""


class MeasurementRejected(TeledoraError, ValueError):
    """A measurement failed the innovation gate (an outlier) and was not fused."""


@dataclass(frozen=True)
class EkfConfig:
    """Noise densities and limits of the planar EKF (all SI).

    Args:
        accel_noise_m_s2: Std of the body acceleration driving vx, vy (per sqrt(s)).
        yaw_accel_noise_rad_s2: Std of the yaw acceleration driving wz (per sqrt(s)).
        position_noise_m: Extra position random walk (per sqrt(s)), covers slip.
        gyro_bias_noise_rad_s: Random walk of the gyro bias (rad/s per sqrt(s)).
        flow_noise_rad_s: Std of one flow-rate reading.
        gyro_noise_rad_s: Std of one gyro yaw-rate reading.
        odom_velocity_noise_m_s: Std of a wheel-odometry linear velocity.
        odom_yaw_rate_noise_rad_s: Std of a wheel-odometry yaw rate.
        initial_position_std_m: Initial std of x and y.
        initial_yaw_std_rad: Initial std of yaw.
        initial_velocity_std_m_s: Initial std of vx and vy.
        initial_yaw_rate_std_rad_s: Initial std of wz.
        initial_gyro_bias_std_rad_s: Initial std of the gyro bias (0 pins it at zero).
        gate_chi2: Innovation gate on flow (squared Mahalanobis distance); 0 disables it.
            The gyro and wheel odometry are not gated: they are the yaw reference.
        max_gated_in_row: After this many flow readings rejected in a row the next one is
            fused ungated, so a real jump (a push, a lift-off) cannot lock the filter out.
        max_step_s: Longest single prediction step; longer gaps are split.
        max_gap_s: A gap longer than this is not integrated (the state is held and
            the velocity uncertainty reset) — a stalled input must not fling the pose.
    """

    accel_noise_m_s2: float
    yaw_accel_noise_rad_s2: float
    position_noise_m: float
    gyro_bias_noise_rad_s: float
    flow_noise_rad_s: float
    gyro_noise_rad_s: float
    odom_velocity_noise_m_s: float
    odom_yaw_rate_noise_rad_s: float
    initial_position_std_m: float
    initial_yaw_std_rad: float
    initial_velocity_std_m_s: float
    initial_yaw_rate_std_rad_s: float
    initial_gyro_bias_std_rad_s: float
    gate_chi2: float
    max_gated_in_row: int
    max_step_s: float
    max_gap_s: float

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0.0):
                raise EkfConfigError(f"{f.name} must be a finite number >= 0, got {v!r}")
        for name in ("flow_noise_rad_s", "gyro_noise_rad_s", "odom_velocity_noise_m_s",
                     "odom_yaw_rate_noise_rad_s", "max_step_s", "max_gap_s"):
            if getattr(self, name) <= 0.0:
                raise EkfConfigError(f"{name} must be > 0")

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any]) -> "EkfConfig":
        """Builds a config from the ``ekf`` section of estimation.yaml."""
        return config_from_mapping(cls, cfg, "ekf", EkfConfigError)


class PlanarEkf:
    """EKF over ``[x, y, yaw, vx, vy, wz, gyro_bias]``.

    Args:
        config: Noise and limits.
        flow_model: Measurement model of the flow sensor (its offset decides whether the
            mounting position is modelled).
    """

    def __init__(self, config: EkfConfig, flow_model: FlowModel) -> None:
        self.config = config
        self.flow_model = flow_model
        self.x = np.zeros(_N)
        c = config
        self.P = np.diag([
            c.initial_position_std_m**2, c.initial_position_std_m**2, c.initial_yaw_std_rad**2,
            c.initial_velocity_std_m_s**2, c.initial_velocity_std_m_s**2, c.initial_yaw_rate_std_rad_s**2,
            c.initial_gyro_bias_std_rad_s**2,
        ])
        self.stamp_ns: int | None = None
        self.late_measurements = 0
        self.skipped_gaps = 0
        self._gated_in_row = 0

    # -- state access ----------------------------------------------------------------------
    def reset(self, x: float = 0.0, y: float = 0.0, yaw: float = 0.0) -> None:
        """Puts the base at a known pose, at rest, with the initial uncertainty."""
        self.__init__(self.config, self.flow_model)  # type: ignore[misc]
        self.x[:3] = [x, y, wrap_angle(yaw)]

    def pose_covariance(self) -> np.ndarray:
        """3x3 covariance over (x, y, yaw)."""
        return self.P[:3, :3].copy()

    def state_dict(self) -> dict[str, float]:
        """The state as a name → value mapping."""
        return {n: float(v) for n, v in zip(STATE_NAMES, self.x)}

    # -- prediction ------------------------------------------------------------------------
    def _predict_step(self, dt: float) -> None:
        c = self.config
        x, y, yaw, vx, vy, wz, bias = self.x
        mid = yaw + 0.5 * wz * dt
        cm, sm = math.cos(mid), math.sin(mid)
        dx_w = vx * cm - vy * sm
        dy_w = vx * sm + vy * cm
        self.x = np.array([x + dx_w * dt, y + dy_w * dt, wrap_angle(yaw + wz * dt), vx, vy, wz, bias])
        F = np.eye(_N)
        F[_X, _YAW] = -dy_w * dt
        F[_Y, _YAW] = dx_w * dt
        F[_X, _VX], F[_X, _VY] = cm * dt, -sm * dt
        F[_Y, _VX], F[_Y, _VY] = sm * dt, cm * dt
        F[_X, _WZ] = -dy_w * 0.5 * dt * dt
        F[_Y, _WZ] = dx_w * 0.5 * dt * dt
        F[_YAW, _WZ] = dt
        q = np.array([
            c.position_noise_m**2 * dt, c.position_noise_m**2 * dt, 0.0,
            c.accel_noise_m_s2**2 * dt, c.accel_noise_m_s2**2 * dt, c.yaw_accel_noise_rad_s2**2 * dt,
            c.gyro_bias_noise_rad_s**2 * dt,
        ])
        self.P = F @ self.P @ F.T + np.diag(q)

    def predict_to(self, stamp_ns: int) -> bool:
        """Advances the state to ``stamp_ns``. Returns False for a measurement older than the
        state (it is then fused at the current time, counted in ``late_measurements``)."""
        if self.stamp_ns is None:
            self.stamp_ns = int(stamp_ns)
            return True
        dt = (int(stamp_ns) - self.stamp_ns) * 1e-9
        if dt < 0.0:
            self.late_measurements += 1
            return False
        self.stamp_ns = int(stamp_ns)
        if dt > self.config.max_gap_s:
            self.skipped_gaps += 1
            self.x[_VX:_BG] = 0.0
            c = self.config
            self.P[_VX:_BG, :] = 0.0
            self.P[:, _VX:_BG] = 0.0
            self.P[_VX, _VX] = self.P[_VY, _VY] = c.initial_velocity_std_m_s**2
            self.P[_WZ, _WZ] = c.initial_yaw_rate_std_rad_s**2
            return True
        n = max(1, math.ceil(dt / self.config.max_step_s))
        for _ in range(n):
            self._predict_step(dt / n)
        return True

    # -- updates ---------------------------------------------------------------------------
    def _update(self, z: np.ndarray, h: np.ndarray, H: np.ndarray, R: np.ndarray, what: str,
                gated: bool = False) -> float:
        innovation = z - h
        S = H @ self.P @ H.T + R
        S_inv = np.linalg.inv(S)
        d2 = float(innovation @ S_inv @ innovation)
        if gated and self.config.gate_chi2 > 0.0 and d2 > self.config.gate_chi2:
            if self._gated_in_row < self.config.max_gated_in_row:
                self._gated_in_row += 1
                raise MeasurementRejected(f"{what} innovation {np.round(innovation, 4).tolist()} "
                                          f"fails the gate ({d2:.1f} > {self.config.gate_chi2:.1f})")
        if gated:
            self._gated_in_row = 0
        K = self.P @ H.T @ S_inv
        self.x = self.x + K @ innovation
        self.x[_YAW] = wrap_angle(self.x[_YAW])
        I_KH = np.eye(_N) - K @ H
        self.P = I_KH @ self.P @ I_KH.T + K @ R @ K.T  # Joseph form keeps P symmetric positive
        return d2

    def update_flow(self, body_flow: npt.ArrayLike, height_m: float) -> float:
        """Fuses a body-axis flow reading (already scaled and yaw-corrected). Returns the
        squared Mahalanobis distance of the innovation; raises MeasurementRejected."""
        z = np.asarray(body_flow, dtype=float)
        H = np.zeros((2, _N))
        H[:, _VX:_BG] = self.flow_model.measurement_jacobian(height_m)
        h = H @ self.x
        R = np.eye(2) * self.config.flow_noise_rad_s**2
        return self._update(z, h, H, R, "flow", gated=True)

    def update_gyro(self, yaw_rate_rad_s: float) -> float:
        """Fuses a gyro yaw rate (rad/s); the gyro reads ``wz + gyro_bias``."""
        H = np.zeros((1, _N))
        H[0, _WZ] = H[0, _BG] = 1.0
        R = np.array([[self.config.gyro_noise_rad_s**2]])
        return self._update(np.array([float(yaw_rate_rad_s)]), H @ self.x, H, R, "gyro")

    def update_odom_twist(self, vx: float, vy: float, wz: float) -> float:
        """Fuses a wheel-odometry body twist."""
        H = np.zeros((3, _N))
        H[0, _VX] = H[1, _VY] = H[2, _WZ] = 1.0
        c = self.config
        R = np.diag([c.odom_velocity_noise_m_s**2, c.odom_velocity_noise_m_s**2, c.odom_yaw_rate_noise_rad_s**2])
        return self._update(np.array([vx, vy, wz], dtype=float), H @ self.x, H, R, "odom")
