"""The base node's decisions, one input at a time, with no I/O.

A ``base_cmd`` passes the command limits (rejected whole, or clamped to the
profile's caps) and becomes the twist the wheels are driven at. Each tick
turns the current twist into the real driver's quantized wheel goals; the
twist falls to zero, and stays there until a new command, when the watchdog
expires or the robot must hold. The wheel velocities read back are integrated
into odometry. The node's loop feeds this object and sends what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.drive.base_command_limits import BaseCommandLimits
from teledora.operators.drive.command_limits import Bounded
from teledora.operators.drive.command_watchdog import CommandWatchdog
from teledora.operators.drive.drive_config import BaseDriveConfig
from teledora.operators.drive.omni_drive import BodyTwist, OmniDrive, WheelTicks
from teledora.operators.drive.wheel_odometry import WheelOdometry

ZERO_TWIST = BodyTwist(0.0, 0.0, 0.0)
WATCHDOG_STOP = "no base_cmd within watchdog: wheels stopped"


@dataclass(frozen=True)
class BaseReport:
    """What one tick publishes: the ``WheelCommands`` and ``Odometry`` messages
    and the diagnostics details of the wheels."""

    wheel_commands: dict[str, Any]
    odom: dict[str, Any]
    details: dict[str, Any]


class BaseStep:
    """Command limits, watchdog, wheel quantization and odometry of the base.

    Args:
        config: drive.yaml's base section (geometry, watchdog timeout).
        limits: Bounds every command before it is used (and counts).
        odom_frame: The odometry's frame (the profile's).
        base_frame: The robot base frame the odometry places (the profile's).
    """

    def __init__(self, config: BaseDriveConfig, limits: BaseCommandLimits, odom_frame: str, base_frame: str) -> None:
        self.drive = OmniDrive(config.geometry)
        self.odometry = WheelOdometry(self.drive)
        self.watchdog = CommandWatchdog(config.watchdog_timeout_s)
        self.limits = limits
        self.odom_frame = odom_frame
        self.base_frame = base_frame
        self.twist = ZERO_TWIST

    def command(self, msg: Mapping[str, Any], now_ns: int) -> Bounded[BodyTwist]:
        """Takes a decoded ``BaseCommand`` received at ``now_ns``; the result
        names what was clamped.

        Raises:
            CommandRejected: a non-finite or absurd value; the last valid
                command stands and the watchdog is not fed.
        """
        bounded = self.limits.bound(BodyTwist(msg["forward_m_s"], msg["left_m_s"], msg["yaw_rad_s"]))
        self.twist = bounded.value
        self.watchdog.feed(now_ns, msg["stamp_ns"])
        return bounded

    def goals(self, now_ns: int, hold: bool) -> WheelTicks:
        """The wheel goals for this tick; zero (until a new command) once the
        watchdog has expired or while ``hold``."""
        if self.watchdog.expired(now_ns) or hold:
            self.twist = ZERO_TWIST
        return self.drive.body_to_wheel_raw(*self.twist)

    def measured(self, now_ns: int, goals: WheelTicks, measured: WheelTicks) -> BaseReport:
        """Integrates the wheel velocities read back after writing ``goals``."""
        pose = self.odometry.update(now_ns, measured)
        v = self.odometry.twist
        return BaseReport(
            wheel_commands={"stamp_ns": now_ns, "left": goals.left, "back": goals.back, "right": goals.right},
            odom={"stamp_ns": now_ns, "frame_id": self.odom_frame, "child_frame_id": self.base_frame,
                  "x": pose.x, "y": pose.y, "yaw": pose.yaw,
                  "vx": v.forward_m_s, "vy": v.left_m_s, "wz": v.yaw_rad_s},
            details={"watchdog_trips": self.watchdog.trips, "wheels": list(goals), "measured": list(measured)},
        )

    def status(self, now_ns: int) -> tuple[str, str]:
        """The diagnostics level and text of the watchdog at ``now_ns``."""
        return ("warn", WATCHDOG_STOP) if self.watchdog.expired(now_ns) else ("ok", "")

    def initial_details(self) -> dict[str, Any]:
        """The diagnostics details before the first tick."""
        return {"watchdog_trips": 0, "wheels": [0, 0, 0]}
