"""Command limits of the lift: a velocity bounded to the profile's lift speed cap."""

from __future__ import annotations

from teledora.operators.drive.command_limits import Bounded, CommandLimits, bound_magnitude, check_cap
from teledora.operators.model.robot_profile import RobotProfile


class LiftCommandLimits(CommandLimits):
    """Bounds a lift velocity (m/s, up positive) to ``±max_speed_m_s``.

    The lift axis then applies the driver's own limits on top (its servo speed
    clamp, floor guard and soft limits; :mod:`~teledora.operators.drive.lift_axis`).

    Args:
        max_speed_m_s: Cap on ``|velocity|``.
        reject_factor: A velocity over this many times the cap is rejected.
    """

    def __init__(self, max_speed_m_s: float, reject_factor: float) -> None:
        super().__init__()
        check_cap("lift speed", max_speed_m_s, reject_factor)
        self.max_speed_m_s = float(max_speed_m_s)
        self.reject_factor = float(reject_factor)

    @classmethod
    def from_profile(cls, profile: RobotProfile) -> "LiftCommandLimits":
        return cls(profile.lift.max_speed_m_s, profile.command_limits.reject_factor)

    def _bound(self, velocity_m_s: float) -> Bounded[float]:
        v, clamp = bound_magnitude("velocity_m_s", velocity_m_s, self.max_speed_m_s, self.reject_factor, "m/s")
        return Bounded(v, (clamp,) if clamp is not None else ())
