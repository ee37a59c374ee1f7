"""base node, Feetech variant: the three omni wheels (ids 8/9/10) in velocity mode.

Each tick writes the quantized goal velocities with one SYNC_WRITE and reads
the wheels' present velocities back with one SYNC_READ; odometry integrates
the twist of the measured velocities. The watchdog zeroes the goals when
``base_cmd`` stops. If a wheel stops answering, the node broadcasts zero goal
velocities (SYNC_WRITE needs no reply), reports the servo in ``diagnostics``
and exits with the error.
Args: ``--config`` drive.yaml, ``--port`` / ``--baud-rate`` override the left
bus; env ``TELEDORA_PROFILE`` the robot profile (command caps).
Inputs, outputs and decisions as the sim variant (:mod:`teledora.nodes.drive.base_sim`,
:mod:`teledora.operators.drive.base_step`); the wheels:
:mod:`teledora.devices.drive.feetech_wheels`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

from teledora.models.config_files import (
    DRIVE,
    add_config_arg,
    load_drive_config,
    load_node_profile,
)
from teledora.operators.drive.base_command_limits import BaseCommandLimits
from teledora.operators.drive.base_step import BaseStep
from teledora.operators.drive.command_limits import CommandRejected

from teledora.devices.drive.feetech_bus import add_left_bus_args, left_bus_from_args
from teledora.devices.drive.feetech_wheels import FeetechWheels
from teledora.devices.device import Device, stopped_on_exit
from teledora.runtime.node_io import NodeIO, make_node, node_id


def run(io: NodeIO, wheels: Device, step: BaseStep, clock: Callable[[], int]) -> None:
    """The event loop: bounds each newest ``base_cmd``; each ``tick`` writes the
    wheel goals, reads the wheels back and publishes ``wheel_commands`` and
    ``odom``. The wheels are left stopped however it ends."""
    io.diag.details = step.initial_details()
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
                        bounded = step.command(msg, clock())
                    except CommandRejected as exc:
                        io.reject(f"base_cmd: {exc}")
                        continue
                    if bounded.clamps:
                        io.clamp(f"base_cmd: {bounded.describe()}")
                elif event["id"] == "tick":
                    now = clock()
                    held = io.recording_hold(now)
                    goals = step.goals(now, held)
                    wheels.write(goals)
                    report = step.measured(now, goals, wheels.read())
                    io.send("wheel_commands", "WheelCommands", report.wheel_commands)
                    io.send("odom", "Odometry", report.odom)
                    io.diag.details = {**report.details, **wheels.diagnostics_details()}
                    io.diag.set_status(*step.status(now))
                    if held:
                        io.diag.set_status("error", f"safe stop: {io.recording_hold_reason}")
            io.diag.details["limits"] = step.limits.counts()
            io.publish_diagnostics()


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    add_left_bus_args(parser)
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    bus = left_bus_from_args(args, config)
    io = NodeIO(make_node(node), node_id("base"), clock)
    profile = load_node_profile()
    limits = BaseCommandLimits.from_profile(profile)
    run(io, FeetechWheels(bus, config.base.wheel_ids), BaseStep(config.base, limits, profile.odom_frame, profile.base_frame), clock)


if __name__ == "__main__":
    main()
