"""What every lift device (simulated or on the bus) reads and is written.

The lift servo is read as a :class:`LiftReading` and written a
:class:`LiftGoal` (a goal velocity and/or a torque switch); the order in which
a goal reaches the servo is fixed here once, for both variants.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

from teledora.devices.device import Device
from teledora.operators.drive.lift_axis import HomingAction


@dataclass(frozen=True)
class LiftReading:
    """One poll of the lift servo (register units)."""

    raw_position: int
    raw_velocity: int
    raw_current: int


@dataclass(frozen=True)
class LiftGoal:
    """A command to the lift servo; None leaves that part as it is.

    Args:
        velocity_raw: Goal velocity (register units).
        torque: Switch the torque on (True) or off (False).
    """

    velocity_raw: int | None = None
    torque: bool | None = None

    @classmethod
    def of_homing(cls, action: HomingAction) -> "LiftGoal":
        """What a homing step writes to the servo."""
        return cls(velocity_raw=action.goal_velocity_raw, torque=action.torque_enable)


class LiftDevice(Device):
    """The lift servo in velocity mode: read a :class:`LiftReading`, write a
    :class:`LiftGoal`; it stops by holding (goal velocity 0)."""

    @abstractmethod
    def read(self) -> LiftReading: ...

    @abstractmethod
    def _write_goal_velocity(self, raw: int) -> None: ...

    @abstractmethod
    def _set_torque(self, enabled: bool) -> None: ...

    def write(self, goal: LiftGoal) -> None:
        """Torque off goes last, after the goal velocity (0 unless given), so
        the servo is never released while still driving; torque on goes first."""
        if goal.torque is not None and not goal.torque:
            self._write_goal_velocity(0 if goal.velocity_raw is None else goal.velocity_raw)
            self._set_torque(False)
            return
        if goal.torque:
            self._set_torque(True)
        if goal.velocity_raw is not None:
            self._write_goal_velocity(goal.velocity_raw)

    def stop(self) -> None:
        """The lift holds: goal velocity 0."""
        self._write_goal_velocity(0)
