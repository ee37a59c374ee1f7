"""Planar (SE(2)) poses: exact integration under a constant body twist, and
linear interpolation between two poses.

A body moving with constant forward/left velocity and yaw rate for ``dt``
follows a circular arc; :func:`integrate_constant_twist` applies that arc in
closed form (the SE(2) exponential), so integrating a full circle in any
number of steps returns to the start up to floating-point rounding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from teledora.operators.errors import TeledoraError
from teledora.operators.geometry.angles import wrap_angle

# Below this |yaw increment| (rad) the series forms of sin(t)/t and (1-cos t)/t are used.
_SERIES_THRESHOLD_RAD = 1e-4


class Se2InputError(TeledoraError, ValueError):
    """A pose, twist or time step that cannot be integrated (NaN, Inf, negative dt)."""


@dataclass(frozen=True)
class Pose2D:
    """A planar pose: x, y (m) and yaw (rad, CCW about +z), e.g. the base in the odom frame."""

    x: float = 0.0
    y: float = 0.0
    yaw: float = 0.0


def _sinc_and_cosc(theta: float) -> tuple[float, float]:
    """Returns sin(theta)/theta and (1 - cos(theta))/theta, stable near zero."""
    if abs(theta) < _SERIES_THRESHOLD_RAD:
        t2 = theta * theta
        return 1.0 - t2 / 6.0 + t2 * t2 / 120.0, theta / 2.0 - theta * t2 / 24.0 + theta * t2 * t2 / 720.0
    return math.sin(theta) / theta, (1.0 - math.cos(theta)) / theta


def integrate_constant_twist(pose: Pose2D, forward_m_s: float, left_m_s: float, yaw_rad_s: float, dt_s: float) -> Pose2D:
    """Moves ``pose`` along the arc of a constant body twist held for ``dt_s``.

    Args:
        pose: Start pose in the odom frame.
        forward_m_s: Body x velocity (FLU).
        left_m_s: Body y velocity (FLU).
        yaw_rad_s: Yaw rate, CCW positive.
        dt_s: Duration, >= 0.

    Raises:
        Se2InputError: non-finite values or a negative ``dt_s``.
    """
    values = (pose.x, pose.y, pose.yaw, forward_m_s, left_m_s, yaw_rad_s, dt_s)
    if not all(math.isfinite(v) for v in values):
        raise Se2InputError(f"pose, twist and dt must be finite, got {values}")
    if dt_s < 0:
        raise Se2InputError(f"dt_s must be >= 0, got {dt_s}")
    theta = yaw_rad_s * dt_s
    sinc, cosc = _sinc_and_cosc(theta)
    # Displacement in the start body frame: V(theta) @ (v * dt).
    vx_dt, vy_dt = forward_m_s * dt_s, left_m_s * dt_s
    dx_body = sinc * vx_dt - cosc * vy_dt
    dy_body = cosc * vx_dt + sinc * vy_dt
    c, s = math.cos(pose.yaw), math.sin(pose.yaw)
    return Pose2D(
        x=pose.x + c * dx_body - s * dy_body,
        y=pose.y + s * dx_body + c * dy_body,
        yaw=wrap_angle(pose.yaw + theta),
    )


def lerp_planar(a: tuple[float, float, float], b: tuple[float, float, float], f: float) -> tuple[float, float, float]:
    """The pose ``f`` of the way from ``a`` to ``b`` (x, y in m, yaw in rad):
    position along the straight line, yaw the short way round (not wrapped)."""
    x0, y0, yaw0 = a
    x1, y1, yaw1 = b
    return x0 + f * (x1 - x0), y0 + f * (y1 - y0), yaw0 + f * wrap_angle(yaw1 - yaw0)
