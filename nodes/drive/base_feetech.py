"""base node, Feetech variant: the three omni wheels (ids 8/9/10) in velocity mode.

Each tick writes the quantized goal velocities with one SYNC_WRITE and reads
the wheels' present velocities back with one SYNC_READ; odometry integrates
the twist of the measured velocities. The watchdog zeroes the goals when
``base_cmd`` stops. If a wheel stops answering, the node broadcasts zero goal
velocities (SYNC_WRITE needs no reply), reports the servo in ``diagnostics``
and exits with the error.
Args: ``--config`` drive.yaml, ``--port`` / ``--baud-rate`` override the left
bus. Inputs/outputs: see :mod:`teledora.devices.drive.base_loop`.
"""

from __future__ import annotations

import argparse
import time
from typing import Any, Callable, Sequence

from teledora.devices.drive.base_loop import run_base
from teledora.models.config_files import DRIVE, add_config_arg, load_drive_config
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.devices.drive.feetech_bus import BusStats, FeetechBus, FeetechBusError, add_left_bus_args, left_bus_from_args
from teledora.operators.drive import feetech_protocol as fp
from teledora.operators.drive.omni_drive import WheelTicks

_VEL_LIMIT = (1 << 15) - 1  # sign-magnitude register: 15 magnitude bits


class FeetechWheels:
    """The wheel servos on a Feetech bus."""

    def __init__(self, bus: FeetechBus, wheel_ids: tuple[int, int, int]) -> None:
        self.bus = bus
        self.ids = wheel_ids

    def connect(self) -> None:
        self.bus.connect()
        for i in self.ids:
            try:
                self.bus.ping(i)
            except FeetechBusError as exc:
                raise FeetechBusError(f"wheel servo {i} not found on {self.bus.port}: {exc}") from exc
            self.bus.write(i, "Torque_Enable", 0)
            self.bus.write(i, "Operating_Mode", fp.OPERATING_MODE_VELOCITY)
            self.bus.write(i, "Goal_Velocity", 0)
            self.bus.write(i, "Torque_Enable", 1)

    def apply(self, ticks: WheelTicks) -> WheelTicks:
        goals = [max(-_VEL_LIMIT, min(_VEL_LIMIT, int(t))) for t in ticks]
        self.bus.sync_write("Goal_Velocity", dict(zip(self.ids, goals)))
        present = self.bus.sync_read(self.ids, ["Present_Velocity"])
        return WheelTicks(*(present[i]["Present_Velocity"] for i in self.ids))

    def diagnostics_details(self) -> dict[str, dict[str, int]]:
        return {"bus": BusStats.totals([self.bus.stats])}

    def stop(self) -> None:
        if self.bus.connected:
            self.bus.sync_write("Goal_Velocity", dict.fromkeys(self.ids, 0))

    def close(self) -> None:
        self.bus.close()


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_config_arg(parser, DRIVE)
    add_left_bus_args(parser)
    args, _ = parser.parse_known_args(argv)  # dora may pass more
    config = load_drive_config(args.config)
    bus = left_bus_from_args(args, config)
    io = NodeIO(make_node(node), node_id("base"), clock)
    run_base(io, FeetechWheels(bus, config.base.wheel_ids), config, clock)


if __name__ == "__main__":
    main()
