"""Command limits of the omni base: body twists bounded to the profile's speed caps."""

from __future__ import annotations

import math

from teledora.operators.drive.command_limits import (
    CAP_ROUNDING,
    Bounded,
    Clamp,
    CommandLimits,
    CommandRejected,
    bound_magnitude,
    check_cap,
    require_finite,
)
from teledora.operators.drive.omni_drive import BodyTwist
from teledora.operators.model.robot_profile import RobotProfile


class BaseCommandLimits(CommandLimits):
    """Bounds a body twist: linear speed by its norm (the direction is kept,
    as teleop caps its stick), yaw rate by its magnitude.

    Args:
        max_linear_m_s: Cap on ``hypot(forward, left)``.
        max_yaw_rad_s: Cap on ``|yaw|``.
        reject_factor: A speed over this many times its cap is rejected.
    """

    def __init__(self, max_linear_m_s: float, max_yaw_rad_s: float, reject_factor: float) -> None:
        super().__init__()
        check_cap("linear speed", max_linear_m_s, reject_factor)
        check_cap("yaw rate", max_yaw_rad_s, reject_factor)
        self.max_linear_m_s = float(max_linear_m_s)
        self.max_yaw_rad_s = float(max_yaw_rad_s)
        self.reject_factor = float(reject_factor)

    @classmethod
    def from_profile(cls, profile: RobotProfile) -> "BaseCommandLimits":
        return cls(profile.base.max_linear_m_s, profile.base.max_yaw_rad_s, profile.command_limits.reject_factor)

    def _bound(self, twist: BodyTwist) -> Bounded[BodyTwist]:
        forward = require_finite("forward_m_s", twist.forward_m_s, "m/s")
        left = require_finite("left_m_s", twist.left_m_s, "m/s")
        yaw, yaw_clamp = bound_magnitude("yaw_rad_s", twist.yaw_rad_s, self.max_yaw_rad_s, self.reject_factor, "rad/s")
        speed = math.hypot(forward, left)
        cap = self.max_linear_m_s
        if speed > self.reject_factor * cap:
            raise CommandRejected(
                f"linear speed {speed:.6g} m/s is absurd: over {self.reject_factor:g} x its {cap:g} m/s cap"
            )
        clamps = []
        if speed > cap * (1.0 + CAP_ROUNDING):
            forward, left = forward * (cap / speed), left * (cap / speed)
            clamps.append(Clamp("linear speed", speed, cap, "m/s"))
        if yaw_clamp is not None:
            clamps.append(yaw_clamp)
        return Bounded(BodyTwist(forward, left, yaw), tuple(clamps))
