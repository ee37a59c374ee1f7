"""Odometry of the omni base from its wheel velocities (commanded or measured)."""

from __future__ import annotations

from teledora.operators.errors import TeledoraError
from teledora.operators.drive.omni_drive import BodyTwist, OmniDrive, WheelTicks
from teledora.operators.geometry import Pose2D, integrate_constant_twist


class OdometryTimeError(TeledoraError, ValueError):
    """Time went backwards between two odometry updates."""


class WheelOdometry:
    """Integrates the twist that raw wheel velocities produce, zero-order hold.

    Each :meth:`update` first moves the pose along the twist held since the
    previous update (exact constant-twist arc), then holds the twist of the new
    wheel velocities until the next update.

    Args:
        drive: Kinematics used to recover the body twist from wheel ticks.
        pose: Initial pose in the odom frame.
    """

    def __init__(self, drive: OmniDrive, pose: Pose2D | None = None) -> None:
        self.drive = drive
        self.pose = pose or Pose2D()
        self.twist = BodyTwist(0.0, 0.0, 0.0)
        self.last_ns: int | None = None

    def update(self, now_ns: int, wheels: WheelTicks) -> Pose2D:
        """Advances to ``now_ns`` and holds the twist of ``wheels`` from then on.

        Raises:
            OdometryTimeError: ``now_ns`` is earlier than the previous update.
        """
        if self.last_ns is not None:
            if now_ns < self.last_ns:
                raise OdometryTimeError(f"time went backwards: {now_ns} < {self.last_ns}")
            dt_s = (now_ns - self.last_ns) * 1e-9
            self.pose = integrate_constant_twist(self.pose, *self.twist, dt_s)
        self.last_ns = now_ns
        self.twist = self.drive.wheel_raw_to_body(*wheels)
        return self.pose
