"""Time-parameterisation of a joint-space path under velocity and acceleration
caps (TOPP-RA, ``toppra``), and the check of a sampled trajectory against
those caps.

The path is a cubic spline through knots given at a path parameter
``s`` in [0, 1]; extra path coordinates (e.g. the tip's distance along its
line) can carry their own caps. TOPP-RA finds the fastest rest-to-rest
progress ``s(t)`` whose joint velocities and accelerations stay within the
caps at its grid points; between them the caps can be passed slightly, so
the caller plans against reduced caps and checks what is actually sampled.

The check works on samples as an arm receives them: divided differences of
the positions at their times (first: velocity, second: acceleration), with
the arm at rest before the first sample and after the last.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError


class PathTimingError(TeledoraError, RuntimeError):
    """No time-parameterisation exists under the caps (or the input is invalid)."""


@dataclass(frozen=True)
class CapViolation:
    """The worst excess of a sampled trajectory over one cap."""

    joint: str
    quantity: str  # "speed" or "acceleration"
    value: float
    cap: float
    unit: str
    time_s: float

    def __str__(self) -> str:
        return (f"joint {self.joint} would reach {self.value:.3f} {self.unit} {self.quantity} at t = {self.time_s:.2f} s "
                f"(cap {self.cap:.3f} {self.unit})")


@dataclass
class TimedPath:
    """A rest-to-rest trajectory along a path: position (and derivatives) at any time."""

    duration_s: float
    _trajectory: object

    def __call__(self, t: npt.ArrayLike, order: int = 0) -> np.ndarray:
        t = np.clip(np.asarray(t, dtype=float), 0.0, self.duration_s)
        return np.asarray(self._trajectory(t, order))


def _toppra():
    """TOPP-RA, imported on first use: its package imports ``matplotlib.pyplot``
    (tens of MB), and a process that only reads the path settings (the ik
    node, through ik.yaml's ``path`` section) never plans a path."""
    import toppra
    import toppra.algorithm
    import toppra.constraint

    if not getattr(_toppra, "configured", False):
        toppra.setup_logging("WARNING")  # its INFO lines would flood the command's output
        _toppra.configured = True
    return toppra


def load_timing_library() -> None:
    """Imports and sets up TOPP-RA now, so that a command about to plan pays
    for it at its start rather than in its first plan."""
    _toppra()


def time_parameterise(s_knots: npt.ArrayLike, q_knots: npt.ArrayLike, max_speed: npt.ArrayLike,
                      max_accel: npt.ArrayLike, gridpoints: int) -> TimedPath:
    """The fastest rest-to-rest trajectory along the cubic spline through
    ``(s_knots, q_knots)`` with ``|dq/dt| <= max_speed`` and
    ``|d2q/dt2| <= max_accel`` per coordinate at ``gridpoints`` points of s.

    Raises:
        PathTimingError: bad input, or no trajectory meets the caps.
    """
    s_knots = np.asarray(s_knots, dtype=float)
    q_knots = np.asarray(q_knots, dtype=float)
    vmax, amax = np.asarray(max_speed, dtype=float), np.asarray(max_accel, dtype=float)
    n = q_knots.shape[1] if q_knots.ndim == 2 else -1
    if q_knots.ndim != 2 or len(s_knots) != len(q_knots) or vmax.shape != (n,) or amax.shape != (n,):
        raise PathTimingError("expected knots (N,) and (N, n) and n speed and acceleration caps")
    if len(s_knots) < 2 or np.any(np.diff(s_knots) <= 0) or not np.all(np.isfinite(q_knots)):
        raise PathTimingError("knots must be finite, at least two, at increasing s")
    if np.any(vmax <= 0) or np.any(amax <= 0) or gridpoints < 2:
        raise PathTimingError("caps must be > 0 and gridpoints >= 2")
    toppra = _toppra()
    path = toppra.SplineInterpolator(s_knots, q_knots)
    constraints = [toppra.constraint.JointVelocityConstraint(np.stack([-vmax, vmax], axis=1)),
                   toppra.constraint.JointAccelerationConstraint(np.stack([-amax, amax], axis=1))]
    grid = np.linspace(s_knots[0], s_knots[-1], gridpoints)
    instance = toppra.algorithm.TOPPRA(constraints, path, gridpoints=grid, parametrizer="ParametrizeConstAccel")
    trajectory = instance.compute_trajectory(0.0, 0.0)
    if trajectory is None:
        raise PathTimingError("no trajectory along this path meets the joint caps")
    return TimedPath(float(trajectory.duration), trajectory)


def sample_at_rate(path: TimedPath, rate_hz: float) -> tuple[np.ndarray, np.ndarray]:
    """Samples at ``1/rate_hz`` spacing from rest to rest. The duration is
    rounded up to whole periods by slowing the whole trajectory uniformly
    (speeds scale by at most 1, accelerations by its square), so the last
    sample is the path's end."""
    if not rate_hz > 0:
        raise PathTimingError(f"rate must be > 0, got {rate_hz}")
    periods = max(1, math.ceil(path.duration_s * rate_hz - 1e-9))
    times = np.arange(periods + 1) / rate_hz
    stretch = path.duration_s / times[-1] if times[-1] > 0 else 0.0
    return times, path(times * stretch)


def check_joint_caps(times: npt.ArrayLike, q: npt.ArrayLike, names: Sequence[str], max_speed: npt.ArrayLike,
                     max_accel: npt.ArrayLike, tolerance: float = 1e-9) -> CapViolation | None:
    """The worst cap excess of a sampled rest-to-rest trajectory, or None.

    Velocity and acceleration are the first and twice the second divided
    differences of the samples, with a sample at rest one period before the
    first and after the last (the arm stands still there).
    """
    t = np.asarray(times, dtype=float)
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or len(t) != len(q) or q.shape[1] != len(names):
        raise PathTimingError("expected times (N,) and positions (N, joints) with one name per joint")
    if len(t) < 2:
        return None
    if np.any(np.diff(t) <= 0):
        raise PathTimingError("sample times must increase")
    t = np.concatenate([[2 * t[0] - t[1]], t, [2 * t[-1] - t[-2]]])
    q = np.concatenate([q[:1], q, q[-1:]])
    v = np.diff(q, axis=0) / np.diff(t)[:, None]
    a = 2.0 * np.diff(v, axis=0) / (t[2:] - t[:-2])[:, None]
    worst: CapViolation | None = None
    for quantity, values, caps, unit, at in (("speed", v, max_speed, "rad/s", t[:-1]),
                                             ("acceleration", a, max_accel, "rad/s²", t[1:-1])):
        caps = np.broadcast_to(np.asarray(caps, dtype=float), (q.shape[1],))
        ratio = np.abs(values) / caps
        k, j = np.unravel_index(int(np.argmax(ratio)), ratio.shape)
        if ratio[k, j] > 1.0 + tolerance and (worst is None or ratio[k, j] > worst.value / worst.cap):
            worst = CapViolation(names[j], quantity, float(abs(values[k, j])), float(caps[j]), unit, float(at[k]))
    return worst
