"""A simple dynamic model of one Feetech STS servo, for simulation and fakes.

Enough behaviour for drivers to be exercised honestly: position or velocity
mode, torque on/off, a first-order velocity response with a speed limit, a
12-bit wrapped position readout over a continuous shaft angle, optional hard
stops (the lift's floor) that stall the shaft and raise the current, and an
external load current (a gripper squeezing, an arm pushing an obstacle).
Time is passed in; nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

POSITION_MODE = 0
VELOCITY_MODE = 1


@dataclass(frozen=True)
class ServoModelConfig:
    """Dynamics of the simulated servo (plausible STS3215/STS3095 figures)."""

    ticks_per_rev: int = 4096
    max_speed_ticks_s: float = 3400.0
    velocity_time_constant_s: float = 0.02
    position_gain_per_s: float = 20.0
    idle_current_ma: float = 40.0
    current_ma_per_ticks_s: float = 0.05
    stall_current_ma: float = 1200.0
    ma_per_raw: float = 6.5


class SimulatedServo:
    """State of one servo: registers the driver writes and the motion they cause.

    Args:
        config: Dynamics.
        position_ticks: Initial continuous shaft position (ticks, any range).
        min_stop_ticks: Hard stop below (None: free).
        max_stop_ticks: Hard stop above (None: free).
    """

    def __init__(
        self,
        config: ServoModelConfig | None = None,
        position_ticks: float = 2048.0,
        min_stop_ticks: float | None = None,
        max_stop_ticks: float | None = None,
    ) -> None:
        self.config = config or ServoModelConfig()
        self.position_ticks = float(position_ticks)
        self.velocity_ticks_s = 0.0
        self.min_stop_ticks = min_stop_ticks
        self.max_stop_ticks = max_stop_ticks
        self.torque_enabled = False
        self.mode = POSITION_MODE
        self.goal_position = int(round(position_ticks)) % self.config.ticks_per_rev
        self.goal_velocity = 0
        self.load_current_ma = 0.0
        self.current_ma = self.config.idle_current_ma
        self.at_stop = False

    def _target_velocity(self) -> float:
        c = self.config
        if not self.torque_enabled:
            return 0.0
        if self.mode == VELOCITY_MODE:
            target = float(self.goal_velocity)
        else:
            # Shortest way round on the 12-bit dial, as a position-mode servo does in one turn.
            here = self.position_ticks % c.ticks_per_rev
            error = self.goal_position - here
            target = c.position_gain_per_s * error
        return max(-c.max_speed_ticks_s, min(c.max_speed_ticks_s, target))

    def step(self, dt_s: float) -> None:
        """Advances the shaft by ``dt_s`` seconds."""
        if dt_s <= 0:
            return
        c = self.config
        target = self._target_velocity()
        alpha = 1.0 - math.exp(-dt_s / c.velocity_time_constant_s)
        self.velocity_ticks_s += (target - self.velocity_ticks_s) * alpha
        new_pos = self.position_ticks + self.velocity_ticks_s * dt_s
        self.at_stop = False
        if self.max_stop_ticks is not None and new_pos >= self.max_stop_ticks:
            new_pos, self.at_stop = self.max_stop_ticks, target > 0
            self.velocity_ticks_s = min(self.velocity_ticks_s, 0.0)
        if self.min_stop_ticks is not None and new_pos <= self.min_stop_ticks:
            new_pos, self.at_stop = self.min_stop_ticks, target < 0
            self.velocity_ticks_s = max(self.velocity_ticks_s, 0.0)
        self.position_ticks = new_pos
        if self.at_stop:
            self.current_ma = c.stall_current_ma + self.load_current_ma
        elif self.torque_enabled:
            self.current_ma = c.idle_current_ma + c.current_ma_per_ticks_s * abs(target) + self.load_current_ma
        else:
            self.current_ma = 0.0

    @property
    def raw_position(self) -> int:
        """Present position as the servo reports it (0..4095)."""
        return int(math.floor(self.position_ticks)) % self.config.ticks_per_rev

    @property
    def raw_velocity(self) -> int:
        """Present velocity in ticks/s (signed)."""
        return int(round(self.velocity_ticks_s))

    @property
    def raw_current(self) -> int:
        """Present current in register units (6.5 mA each)."""
        return int(round(self.current_ma / self.config.ma_per_raw))
