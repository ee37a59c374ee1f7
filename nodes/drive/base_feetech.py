"""base node, Feetech variant: the three omni wheels (ids 8/9/10) in velocity mode.

Each tick writes the quantized goal velocities with one SYNC_WRITE and reads
the wheels' present velocities back with one SYNC_READ; odometry integrates
the twist of the measured velocities. The watchdog zeroes the goals when
``base_cmd`` stops. If a wheel stops answering, the node broadcasts zero goal
velocities (SYNC_WRITE needs no reply), reports the servo in ``diagnostics``
and exits with the error.
Args: ``--config`` drive.yaml, ``--port`` / ``--baud-rate`` override the left
bus; env ``TELEDORA_PROFILE`` the robot profile (command caps).
Inputs/outputs: see :mod:`teledora.devices.drive.base_loop`; the wheels:
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

from teledora.devices.drive.base_loop import run_base
from teledora.devices.drive.feetech_bus import add_left_bus_args, left_bus_from_args
from teledora.devices.drive.feetech_wheels import FeetechWheels
from teledora.runtime.node_io import NodeIO, make_node, node_id


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
    run_base(io, FeetechWheels(bus, config.base.wheel_ids), config, limits, clock, profile.odom_frame, profile.base_frame)


if __name__ == "__main__":
    main()
