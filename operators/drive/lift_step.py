"""The lift node's decisions, one input at a time, with no I/O.

At start the axis homes with the driver's procedure
(:class:`~teledora.operators.drive.lift_axis.LiftHoming`), polled once a
``home_poll_period_s``; while it homes the state reads height 0, not homed,
and commands are bounded but not used (counted as ignored). Once homed, each
tick turns the newest valid command into a goal velocity with the driver's
clamp, floor guard and soft limits, or zero when the watchdog has expired or
the robot must hold; a goal is written only when it changes. A homing that
failed leaves the lift disabled: nothing is written or published.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.drive.command_limits import Bounded
from teledora.operators.drive.command_watchdog import CommandWatchdog
from teledora.operators.drive.lift_axis import HomingAction, HomingPhase, LiftAxis, LiftAxisConfig, LiftHoming
from teledora.operators.drive.lift_command_limits import LiftCommandLimits


@dataclass(frozen=True)
class LiftTick:
    """What one tick of a homed lift does.

    Attributes:
        goal_raw: The goal velocity to write, or None when it has not changed.
        state: The ``LiftState`` message.
        details: The diagnostics details of the axis.
    """

    goal_raw: int | None
    state: dict[str, Any]
    details: dict[str, Any]


class LiftStep:
    """Homing, command limits, watchdog and goal velocities of the lift.

    Args:
        config: drive.yaml's lift section.
        limits: Bounds every command (homing or not) before it is used.
        raw_position: The servo's first position reading (the axis unwraps from it).
    """

    def __init__(self, config: LiftAxisConfig, limits: LiftCommandLimits, raw_position: int) -> None:
        self.config = config
        self.limits = limits
        self.watchdog = CommandWatchdog(config.watchdog_timeout_s)
        self.axis = LiftAxis(config, raw_position)
        self.homing = LiftHoming(self.axis)
        self._first_raw = raw_position
        self._poll_ns = int(config.home_poll_period_s * 1e9)
        self._next_poll_ns = 0
        self.velocity_cmd = 0.0
        self.last_goal: int | None = None
        self.ignored = 0

    def start(self) -> HomingAction:
        """Begins homing; write the returned goal, then call :meth:`wait_poll_period`."""
        return self.homing.start(self._first_raw)

    def wait_poll_period(self, now_ns: int) -> None:
        """The next homing poll is due one poll period after ``now_ns``."""
        self._next_poll_ns = now_ns + self._poll_ns

    @property
    def homing_active(self) -> bool:
        return self.homing.phase in (HomingPhase.DRIVING_DOWN, HomingPhase.SETTLING)

    @property
    def homed(self) -> bool:
        return self.homing.phase is HomingPhase.DONE

    def poll_due(self, now_ns: int) -> bool:
        return now_ns >= self._next_poll_ns

    def homing_poll(self, raw_position: int, raw_current: int, now_ns: int) -> HomingAction:
        """One homing poll with fresh readings; write the returned goal."""
        action = self.homing.poll(raw_position, raw_current, now_ns)
        self.wait_poll_period(now_ns)
        return action

    def command(self, msg: Mapping[str, Any], now_ns: int) -> Bounded[float]:
        """Takes a decoded ``LiftCommand`` received at ``now_ns``: used once
        homed, counted as ignored before. The result names what was clamped.

        Raises:
            CommandRejected: a non-finite or absurd value; the last valid
                command stands and the watchdog is not fed.
        """
        bounded = self.limits.bound(msg["velocity_m_s"])
        if self.homed:
            self.velocity_cmd = bounded.value
            self.watchdog.feed(now_ns, msg["stamp_ns"])
        else:
            self.ignored += 1
        return bounded

    def commands_fresh(self, now_ns: int) -> bool:
        """False once no command arrived within the watchdog timeout."""
        return not self.watchdog.expired(now_ns)

    @staticmethod
    def unhomed_state(now_ns: int) -> dict[str, Any]:
        """The ``LiftState`` published while the lift homes."""
        return {"stamp_ns": now_ns, "height_m": 0.0, "velocity_m_s": 0.0, "homed": False}

    def drive(self, now_ns: int, raw_position: int, raw_velocity: int, alive: bool) -> LiftTick:
        """One tick of the homed lift from fresh readings: the command while
        ``alive`` (fresh and not held), else a stop."""
        height_mm = self.axis.update(raw_position)
        goal = self.axis.velocity_goal_raw(self.velocity_cmd if alive else 0.0)
        write = None if goal == self.last_goal else goal
        self.last_goal = goal
        state = {"stamp_ns": now_ns, "height_m": height_mm / 1000.0,
                 "velocity_m_s": self.axis.velocity_m_s(raw_velocity), "homed": True}
        details = {"height_mm": height_mm, "goal_velocity_raw": goal, "watchdog_trips": self.watchdog.trips,
                   "ignored_while_homing": self.ignored}
        return LiftTick(write, state, details)
