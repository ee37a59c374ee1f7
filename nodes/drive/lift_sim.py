"""lift node, sim variant: the driver's lift logic against a simulated STS3095.

The simulated servo (:mod:`teledora.devices.drive.sim_lift`) has a floor stop
(height 0) and a top stop a little above 600 mm, a 12-bit wrapped position
readout and a stall current at the stops, so homing, unwrapping and the guards
run exactly as on hardware. The sim node drives the model's ``vertical_move``
joint to ``height_m - 0.3``.
Args: ``--config`` drive.yaml (the lift starts at its ``lift_sim.start_height_mm``),
``--start-height-mm`` overrides that start height; env ``TELEDORA_PROFILE`` the robot profile
(command caps). Inputs/outputs: see
:mod:`teledora.devices.drive.lift_loop`.
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

from teledora.devices.drive.lift_loop import run_lift
from teledora.devices.drive.sim_lift import SimLiftServo
from teledora.runtime.node_io import NodeIO, make_node, node_id


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    parser.add_argument("--start-height-mm", type=float, default=None, help="overrides lift_sim.start_height_mm")
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    io = NodeIO(make_node(node), node_id("lift"), clock)
    limits = LiftCommandLimits.from_profile(load_node_profile())
    start_mm = config.lift_sim.start_height_mm if args.start_height_mm is None else args.start_height_mm
    run_lift(io, SimLiftServo(config.lift, start_mm, clock), config.lift, limits, clock)


if __name__ == "__main__":
    main()
