"""Optical-flow measurement model of a downward-looking flow sensor on a planar base.

The sign and axis conventions are ArduPilot's (the ones its OPTICAL_FLOW
``flow_rate_x/y`` fields and its EKF3 use), expressed here for a base whose body
frame is FLU (+x forward, +y left, +z up):

* the sensor sits at ``offset_m`` (FLU, from the base origin on the floor);
  the point of the floor under it moves, seen from the body, with the velocity
  of the sensor ``v_s = v + w x r``;
* in ArduPilot's FRD body axes a sensor reports
  ``flow_x = -v_s,y(FRD) / h + w_x(FRD)`` and ``flow_y = v_s,x(FRD) / h + w_y(FRD)``,
  which in FLU components reads ``flow_x = v_s,y / h + w_x`` and
  ``flow_y = v_s,x / h - w_y``;
* the sensor's own axes are yawed by ``orient_yaw_rad`` from the body axes
  (ArduPilot's FLOW_ORIENT_YAW); the autopilot rotates readings back by that
  angle and multiplies them by ``1 + 0.001 * scaler_ppt`` (FLOW_FXSCALER and
  FLOW_FYSCALER, parts per thousand).

A reading is only usable when the sensor is within its focus range
(``min_height_m`` to ``max_height_m``, about 10 cm for the AlohaMini2 sensor),
its quality is at least ``min_quality`` and EKF3 would take its rates. EKF3
applies two rate tests to the corrected reading ``f`` (scalers and mounting
yaw applied, the numbers OPTICAL_FLOW carries for an unrotated sensor): the
magnitude ``|f|`` must be below a fixed 4.2 rad/s when the reading is
buffered, and at fusion each axis of ``-f`` (EKF3 flips the sensor's sign) must
be below EK3_MAX_FLOW (``max_rate_rad_s``). The second test is signed, so it
bounds backward and rightward motion only; forward and leftward motion is
bounded by the 4.2 rad/s magnitude.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError
from teledora.operators.config import config_from_mapping


EKF3_FLOW_MAGNITUDE_LIMIT_RAD_S = 4.2
"""EKF3 buffers a flow reading only if its rate magnitude is below this (not a parameter)."""


class FlowModelError(TeledoraError, ValueError):
    """A flow model configuration or argument is unusable."""


class FlowReadingInvalid(TeledoraError, ValueError):
    """A flow reading must not be fused (height, quality or rate out of range)."""


@dataclass(frozen=True)
class FlowModelConfig:
    """Mounting and validity limits of a downward optical-flow sensor.

    Args:
        offset_m: Sensor position in the base frame (FLU, m): FLOW_POS_X, -FLOW_POS_Y,
            -FLOW_POS_Z in ArduPilot's FRD terms.
        orient_yaw_rad: Yaw of the sensor's x axis from the body x axis (FLOW_ORIENT_YAW).
        scaler_x_ppt: FLOW_FXSCALER, parts per thousand applied to x readings.
        scaler_y_ppt: FLOW_FYSCALER, parts per thousand applied to y readings.
        min_height_m: Lowest ground distance at which readings are trusted.
        max_height_m: Highest ground distance at which readings are trusted.
        min_quality: Lowest quality (0-255) accepted.
        max_rate_rad_s: EK3_MAX_FLOW: each axis of the sign-flipped corrected reading
            must be below it (see the module docstring).
    """

    offset_m: tuple[float, float, float]
    orient_yaw_rad: float
    scaler_x_ppt: float
    scaler_y_ppt: float
    min_height_m: float
    max_height_m: float
    min_quality: int
    max_rate_rad_s: float

    def __post_init__(self) -> None:
        offset = tuple(float(v) for v in self.offset_m)
        if len(offset) != 3 or not all(math.isfinite(v) for v in offset):
            raise FlowModelError(f"offset_m must be three finite numbers (x, y, z) in m, got {self.offset_m!r}")
        object.__setattr__(self, "offset_m", offset)
        if not 0.0 < self.min_height_m < self.max_height_m:
            raise FlowModelError(
                f"need 0 < min_height_m < max_height_m, got {self.min_height_m} and {self.max_height_m}"
            )
        if not 0 <= self.min_quality <= 255:
            raise FlowModelError(f"min_quality must be within 0..255, got {self.min_quality}")
        if not self.max_rate_rad_s > 0.0:
            raise FlowModelError(f"max_rate_rad_s must be > 0, got {self.max_rate_rad_s}")
        for name in ("scaler_x_ppt", "scaler_y_ppt"):
            if not 1.0 + 0.001 * getattr(self, name) > 0.0:
                raise FlowModelError(f"{name} must be > -1000 ppt, got {getattr(self, name)}")

    @classmethod
    def from_dict(cls, cfg: Mapping[str, Any]) -> "FlowModelConfig":
        """Builds a config from the ``flow_sensor`` section of estimation.yaml."""
        return config_from_mapping(cls, cfg, "flow_sensor", FlowModelError)

    def without_offset(self) -> "FlowModelConfig":
        """The same sensor with its planar mounting offset forgotten (a missing FLOW_POS_X/Y)."""
        x, y, z = self.offset_m
        return FlowModelConfig(
            offset_m=(0.0, 0.0, z), orient_yaw_rad=self.orient_yaw_rad, scaler_x_ppt=self.scaler_x_ppt,
            scaler_y_ppt=self.scaler_y_ppt, min_height_m=self.min_height_m, max_height_m=self.max_height_m,
            min_quality=self.min_quality, max_rate_rad_s=self.max_rate_rad_s,
        )


def _rotate(v: np.ndarray, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([c * v[0] - s * v[1], s * v[0] + c * v[1]])


class FlowModel:
    """Forward and inverse flow model of one sensor.

    Args:
        config: Mounting, calibration and validity limits.
    """

    def __init__(self, config: FlowModelConfig) -> None:
        self.config = config
        self._scale = np.array([1.0 + 0.001 * config.scaler_x_ppt, 1.0 + 0.001 * config.scaler_y_ppt])

    # -- forward -------------------------------------------------------------------------------
    def body_flow(
        self, vx: float, vy: float, wz: float, height_m: float, wx: float = 0.0, wy: float = 0.0
    ) -> np.ndarray:
        """Flow rates (rad/s) about the body x and y axes in ArduPilot's convention.

        Args:
            vx, vy: Base velocity at the base origin, body frame (m/s).
            wz: Yaw rate (rad/s); wx, wy roll and pitch rates (rad/s, zero on flat floors).
            height_m: Distance from the sensor to the floor along its optical axis.
        """
        if not height_m > 0.0:
            raise FlowModelError(f"height_m must be > 0, got {height_m}")
        rx, ry, rz = self.config.offset_m
        # v_s = v + w x r with w = (wx, wy, wz), r = offset (only the planar components matter).
        vsx = vx + wy * rz - wz * ry
        vsy = vy + wz * rx - wx * rz
        return np.array([vsy / height_m + wx, vsx / height_m - wy])

    def sensor_flow(self, body_flow: npt.ArrayLike) -> np.ndarray:
        """What an ideal (gain 1) sensor reports in its own axes for a body-axis flow.

        A real sensor multiplies this by its gain error; the autopilot's scalers undo it.
        """
        return _rotate(np.asarray(body_flow, dtype=float), -self.config.orient_yaw_rad)

    def corrected_flow(self, raw_flow: npt.ArrayLike) -> np.ndarray:
        """Applies the scalers and the mounting yaw to a raw reading, as the autopilot does."""
        return _rotate(np.asarray(raw_flow, dtype=float) * self._scale, self.config.orient_yaw_rad)

    def measurement_jacobian(self, height_m: float) -> np.ndarray:
        """d(body_flow)/d(vx, vy, wz): the 2x3 block an estimator uses (flat floor)."""
        if not height_m > 0.0:
            raise FlowModelError(f"height_m must be > 0, got {height_m}")
        rx, ry, _ = self.config.offset_m
        return np.array([[0.0, 1.0 / height_m, rx / height_m], [1.0 / height_m, 0.0, -ry / height_m]])

    # -- inverse -------------------------------------------------------------------------------
    def velocity_from_flow(self, body_flow: npt.ArrayLike, wz: float, height_m: float) -> np.ndarray:
        """Base-origin body velocity (vx, vy) from a body-axis flow reading and the yaw rate."""
        if not height_m > 0.0:
            raise FlowModelError(f"height_m must be > 0, got {height_m}")
        fx, fy = np.asarray(body_flow, dtype=float)
        rx, ry, _ = self.config.offset_m
        return np.array([fy * height_m + wz * ry, fx * height_m - wz * rx])

    # -- validity ------------------------------------------------------------------------------
    def check_reading(self, flow: npt.ArrayLike, quality: int, height_m: float) -> None:
        """Raises FlowReadingInvalid with the reason when a reading must not be fused.

        Args:
            flow: Corrected reading (body axes, ArduPilot's sign convention), as
                :meth:`corrected_flow` returns it.
            quality: Reported quality (0-255).
            height_m: Reported ground distance.
        """
        cfg = self.config
        if not (math.isfinite(height_m) and cfg.min_height_m <= height_m <= cfg.max_height_m):
            raise FlowReadingInvalid(
                f"ground distance {height_m:.3f} m outside {cfg.min_height_m:.3f}..{cfg.max_height_m:.3f} m"
            )
        if quality < cfg.min_quality:
            raise FlowReadingInvalid(f"quality {quality} below {cfg.min_quality}")
        f = np.asarray(flow, dtype=float)
        if not np.all(np.isfinite(f)):
            raise FlowReadingInvalid("flow rate is not finite")
        magnitude = math.hypot(float(f[0]), float(f[1]))
        if not magnitude < EKF3_FLOW_MAGNITUDE_LIMIT_RAD_S:
            raise FlowReadingInvalid(
                f"flow rate magnitude {magnitude:.2f} rad/s not below EKF3's {EKF3_FLOW_MAGNITUDE_LIMIT_RAD_S} rad/s"
            )
        for axis, value in zip("xy", f):
            if not -value < cfg.max_rate_rad_s:
                raise FlowReadingInvalid(
                    f"flow_{axis} {value:.2f} rad/s: -flow_{axis} not below the {cfg.max_rate_rad_s:.2f} rad/s "
                    "limit (EK3_MAX_FLOW)"
                )

    def is_valid(self, flow: npt.ArrayLike, quality: int, height_m: float) -> bool:
        """True when :meth:`check_reading` would accept the reading."""
        try:
            self.check_reading(flow, quality, height_m)
        except FlowReadingInvalid:
            return False
        return True

    def max_speed_m_s(self, height_m: float, direction_rad: float = 0.0) -> float:
        """Speed bound of a pure translation whose readings EKF3 still fuses at this height.

        Args:
            height_m: Sensor height above the floor.
            direction_rad: Direction of travel in base_link (0 forward, pi/2 left).

        Returns:
            The supremum of accepted speeds (readings at exactly this speed are rejected).
        """
        # translation at speed v along direction a: flow = (v sin a, v cos a) / h
        bound = EKF3_FLOW_MAGNITUDE_LIMIT_RAD_S
        for component in (math.sin(direction_rad), math.cos(direction_rad)):
            if component < 0.0:
                bound = min(bound, self.config.max_rate_rad_s / -component)
        return bound * height_m
