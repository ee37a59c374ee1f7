"""Event loop shared by the base node's sim and Feetech variants.

Inputs: ``base_cmd`` (BaseCommand; only the newest of a burst is used) and
``tick`` (a dora timer, e.g. ``dora/timer/millis/10``). Each tick quantizes the
current command exactly as the real driver does, hands the wheel goals to the
backend (simulated or servo bus), and integrates the twist of the wheel
velocities the backend reports into odometry.
Outputs: ``wheel_commands`` (WheelCommands), ``odom`` (Odometry, odom ->
base_link), ``diagnostics``. A command older than the watchdog timeout
(drive.yaml ``base.watchdog_timeout_s``) is replaced by zero velocity.
"""

from __future__ import annotations

from typing import Callable, Protocol

from teledora.runtime.node_io import NodeIO, backend_details, newest_per_input, next_batch
from teledora.operators.drive.command_watchdog import CommandWatchdog
from teledora.operators.drive.omni_drive import BodyTwist, DriveInputError, OmniDrive, WheelTicks
from teledora.operators.drive.drive_config import DriveConfig
from teledora.operators.drive.wheel_odometry import WheelOdometry

ZERO_TWIST = BodyTwist(0.0, 0.0, 0.0)


class WheelBackend(Protocol):
    """Where wheel goal velocities go: the simulation or the servo bus."""

    def connect(self) -> None: ...

    def apply(self, ticks: WheelTicks) -> WheelTicks:
        """Writes goal velocities; returns the wheel velocities now measured (ticks/s)."""
        ...

    def stop(self) -> None: ...

    def close(self) -> None: ...


def run_base(io: NodeIO, backend: WheelBackend, config: DriveConfig, clock: Callable[[], int]) -> None:
    """Runs the base event loop until the input stream ends.

    Raises:
        Exception: whatever the backend raised after the wheels were stopped
            (a servo that stops answering ends the node with a clear error).
    """
    base = config.base
    drive = OmniDrive(base.geometry)
    odometry = WheelOdometry(drive)
    watchdog = CommandWatchdog(base.watchdog_timeout_s)
    twist = ZERO_TWIST
    io.diag.details = {"watchdog_trips": 0, "wheels": [0, 0, 0]}
    backend.connect()
    try:
        while (batch := next_batch(io.node)) is not None:
            for event in newest_per_input(batch, {"base_cmd", "tick"}):
                if event.get("type") != "INPUT":
                    continue  # STOP / INPUT_CLOSED: finish the stream first
                if event["id"] == "base_cmd":
                    msg = io.decode(event, "BaseCommand")
                    if msg is not None:
                        candidate = BodyTwist(msg["forward_m_s"], msg["left_m_s"], msg["yaw_rad_s"])
                        try:
                            drive.body_to_wheel_raw(*candidate)
                        except DriveInputError as exc:
                            io.reject(f"base_cmd: {exc}")
                            continue
                        twist = candidate
                        watchdog.feed(clock())
                elif event["id"] == "tick":
                    now = clock()
                    if watchdog.expired(now):
                        twist = ZERO_TWIST
                    goals = drive.body_to_wheel_raw(*twist)
                    measured = backend.apply(goals)
                    pose = odometry.update(now, measured)
                    io.send("wheel_commands", "WheelCommands", {"stamp_ns": now, "left": goals.left, "back": goals.back, "right": goals.right})
                    v = odometry.twist
                    io.send("odom", "Odometry", {
                        "stamp_ns": now, "frame_id": base.odom_frame, "child_frame_id": base.base_frame,
                        "x": pose.x, "y": pose.y, "yaw": pose.yaw,
                        "vx": v.forward_m_s, "vy": v.left_m_s, "wz": v.yaw_rad_s,
                    })
                    io.diag.details = {"watchdog_trips": watchdog.trips, "wheels": list(goals), "measured": list(measured),
                                       **backend_details(backend)}
                    io.diag.set_status("warn" if watchdog.expired(now) else "ok", "no base_cmd within watchdog: wheels stopped" if watchdog.expired(now) else "")
            io.publish_diagnostics()
    except Exception as exc:
        io.diag.set_status("error", f"base stopped: {exc}")
        io.diag.error(str(exc))
        io.log("error", f"base stopped: {exc}")
        try:
            backend.stop()
        except Exception as stop_exc:  # the bus may be gone entirely
            io.log("error", f"could not stop wheels: {stop_exc}")
        io.publish_diagnostics(force=True)
        backend.close()
        raise
    backend.stop()
    backend.close()
    io.publish_diagnostics(force=True)
