"""lift node, Feetech variant: the STS3095 lift servo (id 11, left bus), velocity mode.

Same logic as the sim variant (:mod:`teledora.devices.drive.lift_loop`): homing into
the floor stop at start, then velocity commands with the driver's clamp, floor
guard, soft limits and 1 s watchdog. Args: ``--config`` drive.yaml, ``--port``
/ ``--baud-rate`` override the left bus.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

from teledora.models.config_files import DRIVE, add_config_arg, load_drive_config
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.devices.drive.feetech_bus import BusStats, FeetechBus, FeetechBusError, add_left_bus_args, left_bus_from_args
from teledora.devices.drive.lift_loop import LiftReading, run_lift
from teledora.operators.drive import feetech_protocol as fp
_READ = ["Present_Position", "Present_Velocity", "Present_Current"]


class FeetechLift:
    """The lift servo on a Feetech bus."""

    def __init__(self, bus: FeetechBus, servo_id: int) -> None:
        self.bus = bus
        self.id = servo_id

    def connect(self) -> None:
        self.bus.connect()
        try:
            self.bus.ping(self.id)
        except FeetechBusError as exc:
            raise FeetechBusError(f"lift servo {self.id} not found on {self.bus.port}: {exc}") from exc
        self.bus.write(self.id, "Torque_Enable", 0)
        self.bus.write(self.id, "Operating_Mode", fp.OPERATING_MODE_VELOCITY)

    def read(self) -> LiftReading:
        r = self.bus.sync_read([self.id], _READ)[self.id]
        return LiftReading(r["Present_Position"], r["Present_Velocity"], r["Present_Current"])

    def write_goal_velocity(self, raw: int) -> None:
        if not self.bus.connected:
            return
        self.bus.write(self.id, "Goal_Velocity", int(raw))

    def set_torque(self, enabled: bool) -> None:
        self.bus.write(self.id, "Torque_Enable", 1 if enabled else 0)

    def diagnostics_details(self) -> dict[str, dict[str, int]]:
        return {"bus": BusStats.totals([self.bus.stats])}

    def close(self) -> None:
        self.bus.close()


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    add_left_bus_args(parser)
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    bus = left_bus_from_args(args, config)
    io = NodeIO(make_node(node), node_id("lift"), clock)
    run_lift(io, FeetechLift(bus, config.lift.servo_id), config.lift, clock)


if __name__ == "__main__":
    main()
