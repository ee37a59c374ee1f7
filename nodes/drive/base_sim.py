"""base node, sim variant: the real driver's wheel quantization + kinematic odometry.

The simulated wheels follow their goal velocities exactly; the sim node moves
the model's planar base joints from ``odom``. Inputs/outputs: see
:mod:`teledora.devices.drive.base_loop`. Args: ``--config`` drive.yaml; env
``TELEDORA_PROFILE`` the robot profile (command caps).
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
from teledora.devices.drive.sim_wheels import SimWheels
from teledora.runtime.node_io import NodeIO, make_node, node_id


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    io = NodeIO(make_node(node), node_id("base"), clock)
    profile = load_node_profile()
    limits = BaseCommandLimits.from_profile(profile)
    run_base(io, SimWheels(), config, limits, clock, profile.odom_frame, profile.base_frame)


if __name__ == "__main__":
    main()
