"""What the command limits of every actuator share.

Each actuator kind (base, lift, arms) has its own limits class that only fills
in the rule for its command; this base does the bookkeeping. A command is
*rejected* whole when a value is not finite or absurd (far beyond anything
the robot's caps allow: a unit or scaling fault upstream, not an operator's
intent), and the actuator keeps its last valid command. A value over its cap,
but not absurdly, is *clamped* to the cap and the command is used. Both are
counted, and each clamp names the quantity, the value asked for and the value
used.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from teledora.operators.errors import ConfigError, TeledoraError

T = TypeVar("T")

# A value this close over its cap (relative) is taken as at the cap: an
# upstream that scales a vector onto its norm cap lands a rounding error
# either side of it, and that is not a command over the cap.
CAP_ROUNDING = 1e-9


class CommandRejected(TeledoraError, ValueError):
    """A command holds a non-finite or absurd value; the actuator drops it whole."""


class CommandLimitsError(ConfigError):
    """Limits set up with caps or factors that cannot bound anything."""


@dataclass(frozen=True)
class Clamp:
    """One value cut down to its limit."""

    quantity: str
    requested: float
    applied: float
    unit: str

    def __str__(self) -> str:
        return f"{self.quantity} {self.requested:.6g} {self.unit} clamped to {self.applied:.6g} {self.unit}"


@dataclass(frozen=True)
class Bounded(Generic[T]):
    """A command within its limits, with what had to be clamped to get there."""

    value: T
    clamps: tuple[Clamp, ...] = ()

    def describe(self) -> str:
        return "; ".join(str(c) for c in self.clamps)


class CommandLimits(ABC):
    """Bounds one actuator's commands and counts what it rejected and clamped.

    Subclasses implement :meth:`_bound` for their command; callers use
    :meth:`bound`.
    """

    def __init__(self) -> None:
        self.rejected = 0
        self.clamped = 0
        self.clamped_by: dict[str, int] = {}

    @abstractmethod
    def _bound(self, *command: Any) -> Bounded:
        """The command within limits; raises CommandRejected for an unusable one."""

    def bound(self, *command: Any) -> Bounded:
        """The command within limits.

        Raises:
            CommandRejected: a value is not finite or is absurd (counted).
        """
        try:
            result = self._bound(*command)
        except CommandRejected:
            self.rejected += 1
            raise
        if result.clamps:
            self.clamped += 1
            for c in result.clamps:
                self.clamped_by[c.quantity] = self.clamped_by.get(c.quantity, 0) + 1
        return result

    def counts(self) -> dict[str, Any]:
        """Counters for diagnostics: commands rejected, commands clamped, clamps per quantity."""
        return {"rejected": self.rejected, "clamped": self.clamped, "clamped_by": dict(sorted(self.clamped_by.items()))}


def require_finite(quantity: str, value: float, unit: str) -> float:
    """``value`` as a float.

    Raises:
        CommandRejected: it is NaN or infinite.
    """
    v = float(value)
    if not math.isfinite(v):
        raise CommandRejected(f"{quantity} {v} {unit} is not finite")
    return v


def check_cap(quantity: str, cap: float, reject_factor: float) -> None:
    """Raises CommandLimitsError unless ``cap`` and ``reject_factor`` can bound a command."""
    if not (math.isfinite(cap) and cap > 0):
        raise CommandLimitsError(f"{quantity} cap must be positive and finite, got {cap!r}")
    if not (math.isfinite(reject_factor) and reject_factor > 1):
        raise CommandLimitsError(f"reject_factor must be finite and > 1, got {reject_factor!r}")


def bound_magnitude(quantity: str, value: float, cap: float, reject_factor: float, unit: str) -> tuple[float, Clamp | None]:
    """A signed value (speed) within ``±cap``, and the clamp if one was needed.

    Raises:
        CommandRejected: the value is not finite, or its magnitude is over
            ``reject_factor`` times the cap.
    """
    v = require_finite(quantity, value, unit)
    if abs(v) > reject_factor * cap:
        raise CommandRejected(f"{quantity} {v:.6g} {unit} is absurd: over {reject_factor:g} x its {cap:g} {unit} cap")
    if abs(v) > cap * (1.0 + CAP_ROUNDING):
        applied = math.copysign(cap, v)
        return applied, Clamp(quantity, v, applied, unit)
    return v, None
