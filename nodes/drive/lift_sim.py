"""lift node, sim variant: the driver's lift logic against a simulated STS3095.

The simulated servo has a floor stop (height 0) and a top stop a little above
600 mm, a 12-bit wrapped position readout and a stall current at the stops, so
homing, unwrapping and the guards run exactly as on hardware. The sim node
drives the model's ``vertical_move`` joint to ``height_m - 0.3``.
Args: ``--config`` drive.yaml, ``--start-height-mm`` where the lift starts
(default 20 mm above the floor). Inputs/outputs: see
:mod:`teledora.devices.drive.lift_loop`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

from teledora.models.config_files import DRIVE, add_config_arg, load_drive_config
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.devices.drive.lift_loop import LiftReading, run_lift
from teledora.operators.drive.lift_axis import LiftAxisConfig
from teledora.operators.drive.sts_servo_model import VELOCITY_MODE, SimulatedServo

FLOOR_TICKS = 40_000.0  # arbitrary continuous shaft position of the floor stop
TOP_MARGIN_MM = 10.0


class SimLiftServo:
    """A simulated lift servo advanced to the host clock on every access."""

    def __init__(self, config: LiftAxisConfig, start_height_mm: float, clock: Callable[[], int]) -> None:
        ticks_per_mm = config.ticks_per_rev / (config.lead_mm_per_rev * config.output_gear_ratio)
        # dir_sign -1: height grows as the shaft position decreases.
        top = FLOOR_TICKS + config.dir_sign * (config.soft_max_mm + TOP_MARGIN_MM) * ticks_per_mm
        start = FLOOR_TICKS + config.dir_sign * start_height_mm * ticks_per_mm
        lo, hi = sorted((FLOOR_TICKS, top))
        self.servo = SimulatedServo(position_ticks=start, min_stop_ticks=lo, max_stop_ticks=hi)
        self.clock = clock
        self._last_ns = clock()

    def _advance(self) -> None:
        now = self.clock()
        dt = (now - self._last_ns) * 1e-9
        self._last_ns = now
        while dt > 0:  # 5 ms sub-steps keep the velocity response stable
            h = min(dt, 0.005)
            self.servo.step(h)
            dt -= h

    def connect(self) -> None:
        self.servo.mode = VELOCITY_MODE

    def read(self) -> LiftReading:
        self._advance()
        return LiftReading(self.servo.raw_position, self.servo.raw_velocity, self.servo.raw_current)

    def write_goal_velocity(self, raw: int) -> None:
        self._advance()
        self.servo.goal_velocity = int(raw)

    def set_torque(self, enabled: bool) -> None:
        self._advance()
        self.servo.torque_enabled = bool(enabled)

    def close(self) -> None:
        pass


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    parser.add_argument("--start-height-mm", type=float, default=20.0)
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    io = NodeIO(make_node(node), node_id("lift"), clock)
    run_lift(io, SimLiftServo(config.lift, args.start_height_mm, clock), config.lift, clock)


if __name__ == "__main__":
    main()
