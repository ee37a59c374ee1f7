"""Current protection of the arm servos, with the real driver's rules.

Two mechanisms:

* :class:`CurrentHoldLimiter` rewrites goal positions. When a joint's current
  reaches its limit it holds where it is (the gripper: a small step further
  closed, so it keeps squeezing at about the limit) until the commanded goal
  moves back past the held position, by a margin, away from the contact. The
  gripper's retreat (open) direction is fixed by its mechanics; for the other
  joints it is inferred from the direction they were being driven.
* :class:`OvercurrentTrip` stops everything when one servo stays above the trip
  current for N consecutive reads.

Units: goals and positions in joint units (rad), currents in mA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.errors import ConfigError
from teledora.operators.config import config_from_mapping


class CurrentProtectionConfigError(ConfigError):
    """A current protection setting is missing or invalid."""


@dataclass(frozen=True)
class CurrentProtectionConfig:
    """Driver thresholds (mA) and hold parameters (joint units)."""

    ma_per_raw: float
    gripper_hold_ma: float
    gripper_hold_close_step_rad: float
    joint_freeze_ma: float
    release_margin_rad: float
    trip_ma: float
    trip_consecutive_reads: int

    def __post_init__(self) -> None:
        if self.trip_consecutive_reads < 1:
            raise CurrentProtectionConfigError("trip_consecutive_reads must be >= 1")
        if min(self.gripper_hold_ma, self.joint_freeze_ma, self.trip_ma, self.ma_per_raw) <= 0:
            raise CurrentProtectionConfigError("current thresholds must be positive")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "CurrentProtectionConfig":
        """The ``current_protection`` section of drive.yaml, checked."""
        return config_from_mapping(cls, data, "current_protection", CurrentProtectionConfigError)


class CurrentHoldLimiter:
    """Holds a joint's goal once its current reaches a limit (see module doc).

    Args:
        limit_ma: Current at which a hold starts.
        release_margin: How far past the held position (joint units) the goal must
            move, away from the contact, to release the hold.
        hold_close_step: Extra step into the contact when holding (gripper squeeze).
        open_direction: Fixed retreat direction per joint (+1/-1 in joint units), or
            None to infer it from the commanded motion at contact.
        limits: Optional (low, high) clamp of the held goal per joint.
    """

    def __init__(
        self,
        limit_ma: float,
        release_margin: float,
        hold_close_step: float = 0.0,
        open_direction: Mapping[str, float] | None = None,
        limits: Mapping[str, tuple[float, float]] | None = None,
    ) -> None:
        self.limit_ma = limit_ma
        self.release_margin = release_margin
        self.hold_close_step = hold_close_step
        self.open_direction = dict(open_direction) if open_direction is not None else None
        self.limits = dict(limits or {})
        self.holds: dict[str, tuple[float, float]] = {}  # joint -> (held goal, retreat direction)
        self.events: list[str] = []

    def limit(self, goals: Mapping[str, float], present: Mapping[str, float], current_ma: Mapping[str, float]) -> dict[str, float]:
        """Returns ``goals`` with held joints replaced by their held goal.

        Joints absent from ``present`` or ``current_ma`` pass through unchanged.
        """
        out = dict(goals)
        for joint, goal in goals.items():
            if joint not in present or joint not in current_ma:
                continue
            pos = float(present[joint])
            amps = abs(float(current_ma[joint]))
            if joint not in self.holds:
                if amps < self.limit_ma:
                    continue
                if self.open_direction is not None:
                    direction = float(self.open_direction.get(joint, 1.0))
                    held = pos - direction * self.hold_close_step
                else:
                    direction = -1.0 if goal - pos > 0 else 1.0
                    held = pos
                if joint in self.limits:
                    lo, hi = self.limits[joint]
                    held = min(hi, max(lo, held))
                self.holds[joint] = (held, direction)
                self.events.append(f"{joint}: {amps:.0f} mA >= {self.limit_ma:.0f} mA, holding at {held:.4f}")
            held, direction = self.holds[joint]
            if (goal - held) * direction >= self.release_margin:
                del self.holds[joint]
                self.events.append(f"{joint}: goal {goal:.4f} past held {held:.4f}, released")
                continue
            out[joint] = held
        return out


@dataclass(frozen=True)
class OvercurrentTripped:
    """Which servo tripped the protection."""

    name: str
    current_ma: float
    consecutive_reads: int


class OvercurrentTrip:
    """Trips when one servo reads above ``trip_ma`` for ``consecutive`` reads in a row.

    Args:
        trip_ma: Threshold (strictly above trips).
        consecutive: Reads in a row needed.
    """

    def __init__(self, trip_ma: float = 2000.0, consecutive: int = 20) -> None:
        self.trip_ma = trip_ma
        self.consecutive = consecutive
        self.counts: dict[str, int] = {}

    def update(self, current_ma: Mapping[str, float]) -> OvercurrentTripped | None:
        """Counts one read of every servo; returns the first servo that tripped, if any."""
        tripped = None
        for name, ma in current_ma.items():
            ma = abs(float(ma))
            self.counts[name] = self.counts.get(name, 0) + 1 if ma > self.trip_ma else 0
            if tripped is None and self.counts[name] >= self.consecutive:
                tripped = OvercurrentTripped(name, ma, self.counts[name])
        return tripped
