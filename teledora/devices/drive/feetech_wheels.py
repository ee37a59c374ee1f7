"""The base's three omni wheels (Feetech STS, velocity mode) on the left bus."""

from __future__ import annotations

from teledora.devices.device import Device
from teledora.devices.drive.feetech_bus import BusStats, FeetechBus, FeetechBusError
from teledora.operators.drive import feetech_protocol as fp
from teledora.operators.drive.omni_drive import WheelTicks

_VEL_LIMIT = (1 << 15) - 1  # sign-magnitude register: 15 magnitude bits


class FeetechWheels(Device):
    """The wheel servos on a Feetech bus.

    ``write`` sends the goal velocities (WheelTicks) with one SYNC_WRITE,
    ``read`` the present velocities with one SYNC_READ; ``stop`` broadcasts
    zero goals (SYNC_WRITE needs no reply, so it works with a silent servo).

    Args:
        bus: The bus the wheels are on.
        wheel_ids: Servo ids of the left, back and right wheel.
    """

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

    def write(self, ticks: WheelTicks) -> None:
        goals = [max(-_VEL_LIMIT, min(_VEL_LIMIT, int(t))) for t in ticks]
        self.bus.sync_write("Goal_Velocity", dict(zip(self.ids, goals)))

    def read(self) -> WheelTicks:
        present = self.bus.sync_read(self.ids, ["Present_Velocity"])
        return WheelTicks(*(present[i]["Present_Velocity"] for i in self.ids))

    def diagnostics_details(self) -> dict[str, dict[str, int]]:
        return {"bus": BusStats.totals([self.bus.stats])}

    def stop(self) -> None:
        """Wheels at zero."""
        if self.bus.connected:
            self.bus.sync_write("Goal_Velocity", dict.fromkeys(self.ids, 0))

    def close(self) -> None:
        self.bus.close()
