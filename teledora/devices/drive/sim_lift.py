"""A simulated STS3095 lift servo: the lift node's sim device.

A floor stop (height 0) and a top stop a little above the soft limit, a
12-bit wrapped position readout and a stall current at the stops, so the
lift's homing, unwrapping and guards run exactly as on hardware.
"""

from __future__ import annotations

from typing import Callable

from teledora.devices.drive.lift_device import LiftDevice, LiftReading
from teledora.operators.drive.lift_axis import LiftAxisConfig
from teledora.operators.drive.sts_servo_model import VELOCITY_MODE, SimulatedServo

FLOOR_TICKS = 40_000.0  # arbitrary continuous shaft position of the floor stop
TOP_MARGIN_MM = 10.0


class SimLiftServo(LiftDevice):
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

    def _write_goal_velocity(self, raw: int) -> None:
        self._advance()
        self.servo.goal_velocity = int(raw)

    def _set_torque(self, enabled: bool) -> None:
        self._advance()
        self.servo.torque_enabled = bool(enabled)

    def close(self) -> None:
        pass
