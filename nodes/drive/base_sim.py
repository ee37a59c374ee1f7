"""base node, sim variant: the real driver's wheel quantization + kinematic odometry.

Inputs: ``base_cmd`` (BaseCommand; only the newest of a burst is used) and
``tick`` (a dora timer, e.g. ``dora/timer/millis/10``). Outputs:
``wheel_commands`` (WheelCommands), ``odom`` (Odometry, the profile's odom
frame -> base frame), ``diagnostics``. Each tick quantizes the current command
as the real driver does, writes the goals to the wheels and integrates the
twist of the velocities read back; the decisions (command limits, the
watchdog, a recording hold stopping the wheels) are
:mod:`teledora.operators.drive.base_step`. The Feetech variant has the same
id, inputs and outputs.

The simulated wheels follow their goal velocities exactly; the sim node moves
the model's planar base joints from ``odom``. Args: ``--config`` drive.yaml;
env ``TELEDORA_PROFILE`` the robot profile (command caps).
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

from teledora.devices.drive.sim_wheels import SimWheels
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
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    io = NodeIO(make_node(node), node_id("base"), clock)
    profile = load_node_profile()
    limits = BaseCommandLimits.from_profile(profile)
    run(io, SimWheels(), BaseStep(config.base, limits, profile.odom_frame, profile.base_frame), clock)


if __name__ == "__main__":
    main()
