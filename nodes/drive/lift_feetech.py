"""lift node, Feetech variant: the STS3095 lift servo (id 11, left bus), velocity mode.

Same logic as the sim variant (:mod:`teledora.devices.drive.lift_loop`): homing into
the floor stop at start, then velocity commands bounded by the command limits,
with the driver's clamp, floor guard, soft limits and 1 s watchdog. Args:
``--config`` drive.yaml, ``--port`` / ``--baud-rate`` override the left bus;
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
from teledora.operators.drive.lift_command_limits import LiftCommandLimits

from teledora.devices.drive.feetech_bus import add_left_bus_args, left_bus_from_args
from teledora.devices.drive.feetech_lift import FeetechLift
from teledora.devices.drive.lift_loop import run_lift
from teledora.runtime.node_io import NodeIO, make_node, node_id


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    add_left_bus_args(parser)
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    bus = left_bus_from_args(args, config)
    io = NodeIO(make_node(node), node_id("lift"), clock)
    limits = LiftCommandLimits.from_profile(load_node_profile())
    run_lift(io, FeetechLift(bus, config.lift.servo_id), config.lift, limits, clock)


if __name__ == "__main__":
    main()
