"""Three-omni-wheel base kinematics, quantized exactly as the AlohaMini driver does it.

The real driver turns a body twist into raw Feetech goal velocities (ticks/s)
through wheel angular speeds in degrees per second, scales all three wheels
down together when one exceeds the saturation limit, rounds half-to-even and
clamps to int16. Its floating-point operation order decides the result at
rounding ties, so :class:`OmniDrive` performs the same operations in the same
order, with the same numpy primitives (the 3x3 matrix-vector products go
through numpy's ``dot`` as the driver's do; on x86-64 OpenBLAS that is a fused
multiply-add sequence that plain left-to-right Python sums do not reproduce).

Conventions: body twist in the FLU base frame (forward m/s, left m/s, yaw
rad/s counter-clockwise positive). Wheel order is left, back, right (servo ids
in drive.yaml). The driver's external yaw rate is in degrees per second; use
:func:`yaw_deg_s_to_rad_s` to feed a driver-style value in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from teledora.operators.errors import TeledoraError

INT16_MIN = -0x8000
INT16_MAX = 0x7FFF


class DriveInputError(TeledoraError, ValueError):
    """A twist or wheel command the drive cannot convert (NaN, Inf, non-integer ticks)."""


class WheelTicks(NamedTuple):
    """Raw wheel goal or present velocities in servo ticks per second."""

    left: int
    back: int
    right: int


class BodyTwist(NamedTuple):
    """Planar body twist in the FLU base frame."""

    forward_m_s: float
    left_m_s: float
    yaw_rad_s: float


@dataclass(frozen=True)
class OmniDriveGeometry:
    """Geometry and quantization of the omni base (drive.yaml ``base.geometry``).

    Attributes:
        wheel_radius_m: Omni wheel radius the driver uses.
        base_radius_m: Distance from base centre to each wheel.
        wheel_angles_deg: Effective row angles of the left, back, right wheels.
        ticks_per_rev: Encoder ticks per wheel revolution.
        max_wheel_ticks_s: Saturation: all wheels are scaled together when any
            exceeds this magnitude.
    """

    wheel_radius_m: float
    base_radius_m: float
    wheel_angles_deg: tuple[int, int, int]
    ticks_per_rev: float
    max_wheel_ticks_s: float

    def __post_init__(self) -> None:
        if not (self.wheel_radius_m > 0 and self.base_radius_m > 0):
            raise ValueError("wheel_radius_m and base_radius_m must be positive")
        if len(self.wheel_angles_deg) != 3:
            raise ValueError("wheel_angles_deg needs exactly three angles (left, back, right)")
        if not self.max_wheel_ticks_s > 0:
            raise ValueError("max_wheel_ticks_s must be positive")


def yaw_deg_s_to_rad_s(yaw_deg_s: float) -> float:
    """Converts a driver-style yaw rate (deg/s) to rad/s with the driver's arithmetic."""
    return float(yaw_deg_s * (np.pi / 180.0))


def _round_half_even_int16(ticks_s: float) -> int:
    """Python ``round`` (half to even), then clamp to int16 as the driver does."""
    value = int(round(ticks_s))
    return max(INT16_MIN, min(INT16_MAX, value))


class OmniDrive:
    """Body twist <-> raw wheel velocities for a three-omni-wheel base.

    Args:
        geometry: Wheel/base geometry and quantization limits.
    """

    def __init__(self, geometry: OmniDriveGeometry) -> None:
        self.geometry = geometry
        g = self.geometry
        angles = np.radians(np.array(g.wheel_angles_deg))
        self._matrix = np.array([[np.cos(a), np.sin(a), g.base_radius_m] for a in angles])
        self._inverse = np.linalg.inv(self._matrix)
        self._ticks_per_deg = g.ticks_per_rev / 360.0

    def body_to_wheel_raw(self, forward_m_s: float, left_m_s: float, yaw_rad_s: float) -> WheelTicks:
        """Quantizes a body twist into raw wheel goal velocities (ticks/s).

        Raises:
            DriveInputError: a component is NaN or infinite.
        """
        for name, v in (("forward_m_s", forward_m_s), ("left_m_s", left_m_s), ("yaw_rad_s", yaw_rad_s)):
            if not math.isfinite(v):
                raise DriveInputError(f"{name} must be finite, got {v!r}")
        g = self.geometry
        # Body vector with the driver's sign convention on the linear terms.
        body = np.array([-forward_m_s, -left_m_s, yaw_rad_s])
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is detected just below
            wheel_linear_m_s = self._matrix.dot(body)
            wheel_rad_s = wheel_linear_m_s / g.wheel_radius_m
            wheel_deg_s = wheel_rad_s * (180.0 / np.pi)
        if not np.all(np.isfinite(wheel_deg_s)):
            raise DriveInputError(f"twist ({forward_m_s}, {left_m_s}, {yaw_rad_s}) overflows the wheel speeds")
        peak_ticks_s = max(abs(d) * self._ticks_per_deg for d in wheel_deg_s)
        if peak_ticks_s > g.max_wheel_ticks_s:
            wheel_deg_s = wheel_deg_s * (g.max_wheel_ticks_s / peak_ticks_s)
        left, back, right = (_round_half_even_int16(d * self._ticks_per_deg) for d in wheel_deg_s)
        return WheelTicks(left, back, right)

    def wheel_raw_to_body(self, left: int, back: int, right: int) -> BodyTwist:
        """Recovers the body twist that raw wheel velocities (ticks/s) produce.

        Raises:
            DriveInputError: a value is not an integer tick count.
        """
        for name, v in (("left", left), ("back", back), ("right", right)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise DriveInputError(f"wheel {name} must be an integer tick rate, got {v!r}")
        g = self.geometry
        wheel_deg_s = np.array([int(left) / self._ticks_per_deg, int(back) / self._ticks_per_deg, int(right) / self._ticks_per_deg])
        wheel_rad_s = wheel_deg_s * (np.pi / 180.0)
        wheel_linear_m_s = wheel_rad_s * g.wheel_radius_m
        body = self._inverse.dot(wheel_linear_m_s)
        return BodyTwist(float(-body[0]), float(-body[1]), float(body[2]))

