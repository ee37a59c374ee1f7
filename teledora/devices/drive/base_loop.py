"""Event loop shared by the base node's sim and Feetech variants.

Inputs: ``base_cmd`` (BaseCommand; only the newest of a burst is used) and
``tick`` (a dora timer, e.g. ``dora/timer/millis/10``). Each tick quantizes the
current command exactly as the real driver does, writes the wheel goals to the
wheels device (simulated or servo bus), and integrates the twist of the wheel
velocities it reads back into odometry.
Outputs: ``wheel_commands`` (WheelCommands), ``odom`` (Odometry, the
profile's odom frame -> base frame), ``diagnostics``. A command older than the watchdog timeout
(drive.yaml ``base.watchdog_timeout_s``) is replaced by zero velocity, and so
is every command while the run is not being recorded (input
``recorder_status``, see ``NodeIO.recording_hold``). Every command passes the
base's command limits first
(:class:`~teledora.operators.drive.base_command_limits.BaseCommandLimits`):
a non-finite or absurd one is rejected and the last valid command stands,
one over the profile's speed caps is clamped to them.
"""

from __future__ import annotations

from typing import Callable


from teledora.devices.device import Device, stopped_on_exit
from teledora.runtime.node_io import NodeIO
from teledora.operators.drive.base_command_limits import BaseCommandLimits
from teledora.operators.drive.command_limits import CommandRejected
from teledora.operators.drive.command_watchdog import CommandWatchdog
from teledora.operators.drive.omni_drive import BodyTwist, OmniDrive
from teledora.operators.drive.drive_config import DriveConfig
from teledora.operators.drive.wheel_odometry import WheelOdometry

ZERO_TWIST = BodyTwist(0.0, 0.0, 0.0)


def run_base(io: NodeIO, wheels: Device, config: DriveConfig, limits: BaseCommandLimits,
             clock: Callable[[], int], odom_frame: str, base_frame: str) -> None:
    """Runs the base event loop until the input stream ends.

    ``wheels`` (:class:`~teledora.devices.drive.sim_wheels.SimWheels` or
    :class:`~teledora.devices.drive.feetech_wheels.FeetechWheels`) is written
    the wheel goals (WheelTicks) and read back the measured velocities; it is
    left stopped however the loop ends (:func:`~teledora.devices.device.stopped_on_exit`).
    ``limits`` bounds every ``base_cmd`` before it is used; what it rejects or
    clamps is counted in ``diagnostics``. Odometry goes out from ``odom_frame``
    to ``base_frame`` (the profile's names).

    Raises:
        Exception: whatever the device raised after the wheels were stopped
            (a servo that stops answering ends the node with a clear error).
    """
    base = config.base
    drive = OmniDrive(base.geometry)
    odometry = WheelOdometry(drive)
    watchdog = CommandWatchdog(base.watchdog_timeout_s)
    twist = ZERO_TWIST
    io.diag.details = {"watchdog_trips": 0, "wheels": [0, 0, 0]}
    with stopped_on_exit(wheels, io, "base"):
        wheels.connect()
        while (batch := io.next_batch()) is not None:
            for event in io.newest(batch, {"base_cmd", "tick"}):
                if event.get("type") != "INPUT":
                    continue  # STOP / INPUT_CLOSED: finish the stream first
                if event["id"] == "base_cmd":
                    msg = io.decode(event, "BaseCommand")
                    if msg is None:
                        continue
                    try:
                        bounded = limits.bound(BodyTwist(msg["forward_m_s"], msg["left_m_s"], msg["yaw_rad_s"]))
                    except CommandRejected as exc:
                        io.reject(f"base_cmd: {exc}")
                        continue
                    if bounded.clamps:
                        io.clamp(f"base_cmd: {bounded.describe()}")
                    twist = bounded.value
                    watchdog.feed(clock(), msg["stamp_ns"])
                elif event["id"] == "tick":
                    now = clock()
                    held = io.recording_hold(now)
                    if watchdog.expired(now) or held:
                        twist = ZERO_TWIST
                    goals = drive.body_to_wheel_raw(*twist)
                    wheels.write(goals)
                    measured = wheels.read()
                    pose = odometry.update(now, measured)
                    io.send("wheel_commands", "WheelCommands", {"stamp_ns": now, "left": goals.left, "back": goals.back, "right": goals.right})
                    v = odometry.twist
                    io.send("odom", "Odometry", {
                        "stamp_ns": now, "frame_id": odom_frame, "child_frame_id": base_frame,
                        "x": pose.x, "y": pose.y, "yaw": pose.yaw,
                        "vx": v.forward_m_s, "vy": v.left_m_s, "wz": v.yaw_rad_s,
                    })
                    io.diag.details = {"watchdog_trips": watchdog.trips, "wheels": list(goals), "measured": list(measured),
                                       **wheels.diagnostics_details()}
                    io.diag.set_status("warn" if watchdog.expired(now) else "ok", "no base_cmd within watchdog: wheels stopped" if watchdog.expired(now) else "")
                    if held:
                        io.diag.set_status("error", f"safe stop: {io.recording_hold_reason}")
            io.diag.details["limits"] = limits.counts()
            io.publish_diagnostics()
