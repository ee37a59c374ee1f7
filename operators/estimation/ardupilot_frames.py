"""ArduPilot's local NED frame and FRD body ↔ teledora's odom (z up) and FLU base_link.

ArduPilot reports LOCAL_POSITION_NED (north, east, down from the EKF origin)
and ATTITUDE (yaw clockwise from north). Without a compass the EKF's yaw starts
at zero, so its north is the robot's initial forward. teledora's ``odom`` frame
is the same frame turned z-up: ``x = north``, ``y = -east``, ``yaw = -yaw_ned``.
Body rates flip the same way (FRD → FLU: y and z change sign).

EKF_STATUS_REPORT flags say whether the horizontal position is usable:
``POS_HORIZ_REL`` set and ``CONST_POS_MODE`` clear.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from teledora.operators.geometry import wrap_angle

EKF_ATTITUDE = 1
EKF_VELOCITY_HORIZ = 2
EKF_POS_HORIZ_REL = 8
EKF_CONST_POS_MODE = 128
EKF_UNINITIALIZED = 1024


@dataclass(frozen=True)
class PoseCovariance:
    """Standard deviations reported with an autopilot pose (EKF3 exposes only test ratios).

    Args:
        position_std_m: Std of x and y while EKF3 has a relative position.
        yaw_std_rad: Std of yaw.
        lost_position_std_m: Std of x and y while it has none.
    """

    position_std_m: float = 0.02
    yaw_std_rad: float = 0.02
    lost_position_std_m: float = 100.0

    def matrix(self, position_ok: bool) -> np.ndarray:
        s = self.position_std_m if position_ok else self.lost_position_std_m
        return np.diag([s * s, s * s, self.yaw_std_rad**2])


def position_ok(ekf_flags: int) -> bool:
    """True when EKF3's horizontal position may be used."""
    return bool(ekf_flags & EKF_POS_HORIZ_REL) and not ekf_flags & EKF_CONST_POS_MODE


def odom_from_ned(north: float, east: float, vn: float, ve: float, yaw_ned: float,
                  yaw_rate_frd: float) -> dict[str, float]:
    """Planar pose and body twist in teledora's frames from ArduPilot's NED values."""
    yaw = wrap_angle(-yaw_ned)
    vxw, vyw = vn, -ve
    c, s = math.cos(yaw), math.sin(yaw)
    return {"x": float(north), "y": float(-east), "yaw": yaw,
            "vx": c * vxw + s * vyw, "vy": -s * vxw + c * vyw, "wz": float(-yaw_rate_frd)}


def ned_from_odom(x: float, y: float, yaw: float, vx: float, vy: float, wz: float) -> dict[str, float]:
    """Inverse of :func:`odom_from_ned` (used by simulators and fakes)."""
    c, s = math.cos(yaw), math.sin(yaw)
    vxw, vyw = c * vx - s * vy, s * vx + c * vy
    return {"north": float(x), "east": float(-y), "vn": vxw, "ve": -vyw, "yaw_ned": wrap_angle(-yaw),
            "yaw_rate_frd": float(-wz)}
