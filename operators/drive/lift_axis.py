"""The AlohaMini lift axis: multi-turn position, homing, floor guard and soft limits.

The lift is one STS3095 servo in velocity mode turning a 131 mm/rev lead screw.
The servo reports a 12-bit position (0..4095), so the axis unwraps it into a
multi-turn count (a jump over half a turn between polls is a wrap), converts
it to millimetres with the driver's direction sign (-1: positive servo
velocity drives the lift down), homes by driving down into the floor stop, and
then refuses motion past the floor guard and soft limits, as the real driver
does. Height 0 mm is the homed floor position; the model's lift joint is
``height_mm / 1000`` plus the robot profile's ``lift.model_offset_m``.

Pure logic: the caller reads the servo and writes the goal velocities this
module returns, and passes time in.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.errors import ConfigError, TeledoraError
from teledora.operators.config import config_from_mapping


class LiftConfigError(ConfigError):
    """A lift configuration value is missing or out of range."""


class LiftNotHomedError(TeledoraError, RuntimeError):
    """A height was requested before the axis was homed."""


@dataclass(frozen=True)
class LiftAxisConfig:
    """Lift geometry, limits and homing parameters (drive.yaml ``lift``, the driver's values)."""

    servo_id: int
    lead_mm_per_rev: float
    output_gear_ratio: float
    ticks_per_rev: int
    dir_sign: int
    soft_min_mm: float
    soft_max_mm: float
    descent_floor_mm: float
    kp_ticks_s_per_mm: float
    deadband_mm: float
    max_ticks_s: int
    home_speed_ticks_s: int
    home_stall_current_ma: float
    home_stall_ticks: int
    home_stall_polls: int
    home_poll_period_s: float
    home_max_polls: int
    home_settle_s: float
    watchdog_timeout_s: float
    ma_per_raw: float

    def __post_init__(self) -> None:
        if self.dir_sign not in (-1, 1):
            raise LiftConfigError(f"dir_sign must be -1 or +1, got {self.dir_sign}")
        if not self.lead_mm_per_rev > 0:
            raise LiftConfigError("lead_mm_per_rev must be positive")
        if not self.soft_min_mm < self.soft_max_mm:
            raise LiftConfigError("soft_min_mm must be below soft_max_mm")
        if self.max_ticks_s <= 0 or self.home_stall_polls < 1 or self.home_max_polls < 1:
            raise LiftConfigError("max_ticks_s, home_stall_polls and home_max_polls must be positive")

    @property
    def mm_per_deg(self) -> float:
        return (self.lead_mm_per_rev * self.output_gear_ratio) / 360.0

    @property
    def deg_per_tick(self) -> float:
        return 360.0 / float(self.ticks_per_rev)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LiftAxisConfig":
        """The ``lift`` section of drive.yaml, checked."""
        return config_from_mapping(cls, data, "lift", LiftConfigError)


class MultiTurnCounter:
    """Unwraps a 12-bit servo position into a running tick count.

    Args:
        ticks_per_rev: Encoder counts per turn (4096).
        raw: First reading.
    """

    def __init__(self, ticks_per_rev: int, raw: int) -> None:
        self.ticks_per_rev = float(ticks_per_rev)
        self.last_raw = float(raw)
        self.extended_ticks = 0.0

    def update(self, raw: int) -> float:
        """Adds the motion since the last reading; a jump over half a turn is a wrap."""
        cur = float(raw)
        delta = cur - self.last_raw
        half = self.ticks_per_rev * 0.5
        if delta > half:
            delta -= self.ticks_per_rev
        elif delta < -half:
            delta += self.ticks_per_rev
        self.extended_ticks += delta
        self.last_raw = cur
        return self.extended_ticks


class LiftAxis:
    """Height bookkeeping and velocity goals for the lift servo.

    Args:
        config: Lift parameters.
        raw_position: The servo's position when the axis is configured.
    """

    def __init__(self, config: LiftAxisConfig, raw_position: int) -> None:
        self.config = config
        self.counter = MultiTurnCounter(config.ticks_per_rev, raw_position)
        self.zero_deg = 0.0
        self.homed = False
        self.height_mm = 0.0

    def extended_deg(self) -> float:
        """Multi-turn angle in degrees with the direction sign applied."""
        return self.config.dir_sign * self.counter.extended_ticks * self.config.deg_per_tick

    def update(self, raw_position: int) -> float:
        """Takes a new position reading and returns the height in mm."""
        self.counter.update(raw_position)
        self.height_mm = (self.extended_deg() - self.zero_deg) * self.config.mm_per_deg
        return self.height_mm

    def set_zero(self, raw_position: int) -> None:
        """Declares the current position the floor (0 mm) and marks the axis homed."""
        self.counter.update(raw_position)
        self.zero_deg = self.extended_deg()
        self.height_mm = 0.0
        self.homed = True

    def velocity_m_s(self, present_velocity_raw: int) -> float:
        """Lift velocity (m/s, up positive) from the servo's present velocity (ticks/s)."""
        c = self.config
        return c.dir_sign * present_velocity_raw * c.deg_per_tick * c.mm_per_deg / 1000.0

    def ticks_s_for(self, velocity_m_s: float) -> int:
        """Lift velocity (m/s, up positive) as the driver's velocity command (ticks/s, truncated)."""
        if not math.isfinite(velocity_m_s):
            raise LiftConfigError(f"lift velocity must be finite, got {velocity_m_s!r}")
        deg_s = velocity_m_s * 1000.0 / self.config.mm_per_deg
        return int(deg_s / self.config.deg_per_tick)

    def _guard(self, v: float) -> float:
        """Floor guard, then soft limits, on an up-positive velocity."""
        c = self.config
        if v < 0 and self.height_mm <= c.descent_floor_mm:
            return 0
        if (self.height_mm >= c.soft_max_mm and v > 0) or (self.height_mm <= c.soft_min_mm and v < 0):
            return 0
        return v

    def velocity_goal_raw(self, velocity_m_s: float) -> int:
        """Goal_Velocity to write for a lift velocity command (m/s, up positive).

        Clamped to ``max_ticks_s``; zero when it would descend at or below the floor
        guard, or push past a soft limit.

        Raises:
            LiftNotHomedError: the axis has not been homed.
        """
        if not self.homed:
            raise LiftNotHomedError("lift velocity command before homing")
        c = self.config
        v = max(-c.max_ticks_s, min(c.max_ticks_s, self.ticks_s_for(velocity_m_s)))
        return int(self._guard(v) * c.dir_sign)

    def height_goal_raw(self, target_mm: float) -> int:
        """Goal_Velocity to write to approach ``target_mm`` (proportional, deadband, clamp).

        Raises:
            LiftNotHomedError: the axis has not been homed.
        """
        if not self.homed:
            raise LiftNotHomedError("lift height target before homing")
        if not math.isfinite(target_mm):
            raise LiftConfigError(f"lift target must be finite, got {target_mm!r}")
        c = self.config
        err = target_mm - self.height_mm
        if abs(err) <= c.deadband_mm:
            v = 0.0
        else:
            v = max(-c.max_ticks_s, min(c.max_ticks_s, c.kp_ticks_s_per_mm * err))
        return int(c.dir_sign * self._guard(v))


class HomingPhase(enum.Enum):
    DRIVING_DOWN = "driving_down"
    SETTLING = "settling"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class HomingAction:
    """What the caller must do after a homing poll.

    Attributes:
        phase: Phase after this poll.
        goal_velocity_raw: Goal_Velocity to write, or None for no write.
        torque_enable: Torque_Enable to write, or None for no write.
    """

    phase: HomingPhase
    goal_velocity_raw: int | None = None
    torque_enable: bool | None = None


class LiftHoming:
    """Drive down until the floor stop stalls the servo, release, settle, zero.

    Stalled poll: current >= ``home_stall_current_ma`` or the raw position moved
    <= ``home_stall_ticks`` since the previous poll. ``home_stall_polls`` stalled
    polls in a row end the descent. The torque is then released for
    ``home_settle_s`` and the axis zeroed; torque comes back on at goal 0.
    No stall within ``home_max_polls`` polls fails (the axis stays unhomed).

    Args:
        axis: The axis to zero.
    """

    def __init__(self, axis: LiftAxis) -> None:
        self.axis = axis
        self.phase = HomingPhase.DRIVING_DOWN
        self.polls = 0
        self.stalled = 0
        self._last_raw: int | None = None
        self._settle_until_ns: int | None = None
        self.failure = ""

    def start(self, raw_position: int) -> HomingAction:
        """Begins homing at the current raw position; write the returned goal."""
        self._last_raw = int(raw_position)
        return HomingAction(HomingPhase.DRIVING_DOWN, goal_velocity_raw=self.axis.config.home_speed_ticks_s, torque_enable=True)

    def poll(self, raw_position: int, current_raw: int, now_ns: int) -> HomingAction:
        """One homing poll (every ``home_poll_period_s``) with fresh servo readings."""
        c = self.axis.config
        if self.phase is HomingPhase.DRIVING_DOWN:
            if self._last_raw is None:
                raise RuntimeError("LiftHoming.poll before start")
            self.polls += 1
            self.axis.update(raw_position)
            moved = abs(int(raw_position) - self._last_raw) > c.home_stall_ticks
            self._last_raw = int(raw_position)
            current_ma = abs(current_raw) * c.ma_per_raw
            if current_ma >= c.home_stall_current_ma or not moved:
                self.stalled += 1
            else:
                self.stalled = 0
            if self.stalled >= c.home_stall_polls:
                self.phase = HomingPhase.SETTLING
                self._settle_until_ns = now_ns + int(c.home_settle_s * 1e9)
                return HomingAction(self.phase, goal_velocity_raw=0, torque_enable=False)
            if self.polls >= c.home_max_polls:
                self.phase = HomingPhase.FAILED
                self.failure = f"no floor stall within {c.home_max_polls} polls"
                return HomingAction(self.phase, goal_velocity_raw=0)
            return HomingAction(self.phase)
        if self.phase is HomingPhase.SETTLING:
            if now_ns < (self._settle_until_ns or 0):
                self.axis.update(raw_position)
                return HomingAction(self.phase)
            self.axis.set_zero(raw_position)
            self.phase = HomingPhase.DONE
            return HomingAction(self.phase, goal_velocity_raw=0, torque_enable=True)
        return HomingAction(self.phase)
