"""Ideal simulated omni wheels: the base node's sim device."""

from __future__ import annotations

from teledora.devices.device import Device
from teledora.operators.drive.omni_drive import WheelTicks


class SimWheels(Device):
    """Ideal wheels: the measured velocity is the commanded one.

    ``write`` takes the wheel goal velocities (WheelTicks, ticks/s), ``read``
    returns the velocities now measured.
    """

    def __init__(self) -> None:
        self.last = WheelTicks(0, 0, 0)

    def connect(self) -> None:
        self.last = WheelTicks(0, 0, 0)

    def write(self, ticks: WheelTicks) -> None:
        self.last = ticks

    def read(self) -> WheelTicks:
        return self.last

    def stop(self) -> None:
        """Wheels at zero."""
        self.last = WheelTicks(0, 0, 0)

    def close(self) -> None:
        pass
