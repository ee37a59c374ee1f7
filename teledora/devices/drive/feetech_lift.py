"""The lift's STS3095 servo (velocity mode) on the left Feetech bus."""

from __future__ import annotations

from teledora.devices.drive.feetech_bus import BusStats, FeetechBus, FeetechBusError
from teledora.devices.drive.lift_device import LiftDevice, LiftReading
from teledora.operators.drive import feetech_protocol as fp

_READ = ["Present_Position", "Present_Velocity", "Present_Current"]


class FeetechLift(LiftDevice):
    """The lift servo on a Feetech bus.

    Args:
        bus: The bus the lift servo is on.
        servo_id: Its servo id.
    """

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

    def _write_goal_velocity(self, raw: int) -> None:
        if not self.bus.connected:
            return
        self.bus.write(self.id, "Goal_Velocity", int(raw))

    def _set_torque(self, enabled: bool) -> None:
        self.bus.write(self.id, "Torque_Enable", 1 if enabled else 0)

    def diagnostics_details(self) -> dict[str, dict[str, int]]:
        return {"bus": BusStats.totals([self.bus.stats])}

    def close(self) -> None:
        self.bus.close()
