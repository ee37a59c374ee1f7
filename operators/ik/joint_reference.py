"""The joint reference the arms are commanded to: speed-, acceleration- and
bound-guarded, with a tick-local velocity feedforward.

Each tick the IK proposes a configuration. The displacement from the current
reference is scaled *uniformly* (every joint by the same factor, so the
direction of motion in joint space is kept) until no joint exceeds its speed
cap and, where possible, its acceleration cap; the result is clamped into the
joint range pulled inward by one ulp (``nextafter``), so a reference is never
exactly on a bound. The feedforward ``dq_ref`` is the displacement that was
actually accepted divided by the tick length. The position actuators are then
driven with ``q_ref + (kv/kp) * dq_ref``.

Holds (and failed solves) keep the last reference and clear the feedforward.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError
from teledora.operators.config import config_from_mapping


class JointReferenceError(TeledoraError, ValueError):
    """Inconsistent joint reference set-up or a non-finite proposal."""


@dataclass(frozen=True)
class JointReferenceConfig:
    """Caps applied to every arm joint (rad/s, rad/s²)."""

    max_speed_rad_s: float
    max_accel_rad_s2: float

    def __post_init__(self) -> None:
        if not (self.max_speed_rad_s > 0 and self.max_accel_rad_s2 > 0):
            raise JointReferenceError("caps must be > 0")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "JointReferenceConfig":
        """The ``joint_reference`` section, checked."""
        return config_from_mapping(cls, data, "joint_reference", JointReferenceError)


def uniform_scale(displacement: np.ndarray, limit: np.ndarray) -> float:
    """Largest factor in [0, 1] with ``|s * displacement| <= limit`` for every joint."""
    with np.errstate(divide="ignore"):
        return min(1.0, float(np.min(limit / np.abs(displacement))))


def acceleration_scale(velocity: np.ndarray, previous: np.ndarray, dv_max: np.ndarray, s_max: float) -> float:
    """Largest s in [0, s_max] with ``|s*velocity - previous| <= dv_max`` per joint.

    When no such s exists (the arm would have to brake harder than the cap
    allows along this direction), the s that minimises the worst violation.
    Joints with zero proposed velocity are ignored (their acceleration does
    not depend on s).
    """
    still = velocity == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (previous - dv_max) / velocity
        b = (previous + dv_max) / velocity
    lo = float(np.max(np.where(still, -np.inf, np.minimum(a, b)), initial=0.0))
    hi = min(s_max, float(np.min(np.where(still, np.inf, np.maximum(a, b)))))
    if lo <= hi:
        return hi
    moving = ~still
    velocity, previous, dv_max = velocity[moving], previous[moving], dv_max[moving]

    # the worst violation is convex and piecewise linear in s: two grid passes
    a, b = 0.0, s_max
    for _ in range(2):
        grid = np.linspace(a, b, 101)
        worst = np.max(np.abs(np.outer(grid, velocity) - previous) - dv_max, axis=1)
        k = int(np.argmin(worst))
        step = (b - a) / 100.0
        a, b = max(0.0, grid[k] - step), min(s_max, grid[k] + step)
    return float(grid[k])


class JointReference:
    """Guarded reference for a fixed, ordered set of joints.

    Args:
        names: Joint names (the order of every array here).
        lower: Lower joint bounds (rad).
        upper: Upper joint bounds (rad).
        config: Speed and acceleration caps.
    """

    def __init__(self, names: list[str], lower: npt.ArrayLike, upper: npt.ArrayLike, config: JointReferenceConfig) -> None:
        self.names = list(names)
        self.lower = np.asarray(lower, dtype=float).copy()
        self.upper = np.asarray(upper, dtype=float).copy()
        n = len(self.names)
        if self.lower.shape != (n,) or self.upper.shape != (n,):
            raise JointReferenceError(f"expected {n} lower and upper bounds")
        if np.any(self.lower >= self.upper):
            raise JointReferenceError("every lower bound must be below its upper bound")
        self.lower_inner = np.nextafter(self.lower, np.inf)
        self.upper_inner = np.nextafter(self.upper, -np.inf)
        self.max_speed = np.full(n, config.max_speed_rad_s)
        self.max_accel = np.full(n, config.max_accel_rad_s2)
        self._q = np.zeros(n)
        self._dq = np.zeros(n)
        self.initialized = False

    @property
    def q(self) -> np.ndarray:
        """Current reference (copy)."""
        return self._q.copy()

    @property
    def dq(self) -> np.ndarray:
        """Current feedforward velocity (copy)."""
        return self._dq.copy()

    def clamp(self, q: npt.ArrayLike) -> np.ndarray:
        """``q`` clamped into the inward-pulled bounds."""
        return np.clip(np.asarray(q, dtype=float), self.lower_inner, self.upper_inner)

    def reset(self, q: npt.ArrayLike) -> None:
        """Starts the reference at ``q`` (clamped into bounds), feedforward zero."""
        q = np.asarray(q, dtype=float)
        if q.shape != self._q.shape or not np.all(np.isfinite(q)):
            raise JointReferenceError(f"reset needs {len(self.names)} finite values")
        self._q = self.clamp(q)
        self._dq[:] = 0.0
        self.initialized = True

    def propose(self, q_candidate: npt.ArrayLike, dt: float) -> np.ndarray:
        """The guarded configuration for ``q_candidate`` (state unchanged).

        Raises:
            JointReferenceError: not initialised, bad dt, or non-finite proposal.
        """
        if not self.initialized:
            raise JointReferenceError("joint reference used before reset()")
        if not dt > 0:
            raise JointReferenceError(f"dt must be > 0, got {dt}")
        q_candidate = np.asarray(q_candidate, dtype=float)
        if q_candidate.shape != self._q.shape or not np.all(np.isfinite(q_candidate)):
            raise JointReferenceError("proposal must hold one finite value per joint")
        step = q_candidate - self._q
        velocity = step / dt
        s = uniform_scale(velocity, self.max_speed)
        s = acceleration_scale(velocity, self._dq, self.max_accel * dt, s)
        return self.clamp(self._q + s * step)

    def commit(self, q_new: npt.ArrayLike, dt: float) -> None:
        """Accepts ``q_new`` as the reference; feedforward = accepted displacement / dt."""
        q_new = self.clamp(q_new)
        self._dq = (q_new - self._q) / dt
        self._q = q_new

    def hold(self) -> None:
        """Keeps the last reference and clears the feedforward."""
        self._dq[:] = 0.0
