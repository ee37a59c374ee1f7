"""Did an episode place the object? A judge from the object's true pose at the
episode's end, and the Wilson score interval for a success rate over episodes.

An episode succeeds when, at its end, the object's centre lies within
``xy_m`` of the goal (horizontal distance), it stands upright (its z axis
within ``tilt_deg`` of the world's), it rests at its resting height (within
``rest_m``: set down, not hanging in a grip or fallen off), and the hand's
gripper is open (its joint under ``released_below_rad``: let go, not still
holding it). Pure: numbers in, a verdict with every figure out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from teledora.operators.errors import ConfigError

Z_95 = 1.959963984540054  # the standard normal's 97.5 % quantile


class JudgeConfigError(ConfigError):
    """The judge's tolerances are malformed."""


@dataclass(frozen=True)
class JudgeTolerances:
    """What counts as placed: horizontal distance to the goal (m), tilt from
    upright (deg), height off the resting height (m), the gripper joint
    below which the hand has let go (rad), and the object's resting height
    (its centre's z on the support, m)."""

    xy_m: float
    tilt_deg: float
    rest_m: float
    released_below_rad: float
    rest_z_m: float

    def __post_init__(self) -> None:
        for name in ("xy_m", "tilt_deg", "rest_m", "released_below_rad"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0.0):
                raise JudgeConfigError(f"judge.{name}: must be a finite number > 0")
        if not math.isfinite(self.rest_z_m):
            raise JudgeConfigError("judge.rest_z_m: must be finite")


@dataclass(frozen=True)
class Verdict:
    """One episode's outcome, with the figures it was judged on."""

    success: bool
    xy_error_m: float
    tilt_deg: float
    z_error_m: float
    gripper_rad: float | None
    reasons: tuple[str, ...]

    def sentence(self) -> str:
        figures = (f"{self.xy_error_m * 1000:.1f} mm from the goal, tilt {self.tilt_deg:.1f} deg, "
                   f"{self.z_error_m * 1000:+.1f} mm off resting height")
        return f"{'success' if self.success else 'failure'}: {figures}" + ("" if self.success else f" ({'; '.join(self.reasons)})")


def tilt_rad(quat_xyzw: Sequence[float]) -> float:
    """Angle between a body's z axis and the world's, from its (x, y, z, w) quaternion."""
    qx, qy, qz, qw = (float(v) for v in quat_xyzw)
    n2 = qx * qx + qy * qy + qz * qz + qw * qw
    if not (math.isfinite(n2) and n2 > 0.0):
        raise ValueError("orientation: not a finite, non-zero quaternion")
    zz = 1.0 - 2.0 * (qx * qx + qy * qy) / n2  # R[2][2] of the normalised rotation
    return math.acos(max(-1.0, min(1.0, zz)))


def judge_placement(position: Sequence[float], quat_xyzw: Sequence[float], goal_xy: Sequence[float],
                    gripper_rad: float | None, tol: JudgeTolerances) -> Verdict:
    """The verdict on an object at ``position`` (world x, y, z) and
    orientation ``quat_xyzw`` for the goal ``goal_xy``; ``gripper_rad`` is the
    hand's gripper joint at the same instant (None: unknown, which fails:
    a release that cannot be seen is not counted as one).

    Raises:
        ValueError: a position or goal that is not finite.
    """
    x, y, z = (float(v) for v in position)
    gx, gy = (float(v) for v in goal_xy)
    if not all(math.isfinite(v) for v in (x, y, z, gx, gy)):
        raise ValueError("position and goal must be finite")
    xy_error = math.hypot(x - gx, y - gy)
    tilt = math.degrees(tilt_rad(quat_xyzw))
    z_error = z - tol.rest_z_m
    reasons = []
    if not xy_error <= tol.xy_m:
        reasons.append(f"{xy_error * 1000:.1f} mm from the goal (tolerance {tol.xy_m * 1000:g} mm)")
    if not tilt <= tol.tilt_deg:
        reasons.append(f"tilted {tilt:.1f} deg (upright within {tol.tilt_deg:g} deg)")
    if not abs(z_error) <= tol.rest_m:
        reasons.append(f"{z_error * 1000:+.1f} mm off its resting height (within {tol.rest_m * 1000:g} mm): not set down")
    if gripper_rad is None or not math.isfinite(gripper_rad):
        reasons.append("the gripper's position is unknown: the release cannot be seen")
    elif not gripper_rad < tol.released_below_rad:
        reasons.append(f"gripper closed ({gripper_rad:.2f} rad, open below {tol.released_below_rad:g} rad): not let go")
    return Verdict(not reasons, xy_error, tilt, z_error, gripper_rad, tuple(reasons))


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float]:
    """The Wilson score interval for a success rate (95 % at the default ``z``).

    Raises:
        ValueError: no trials, or successes outside 0..trials.
    """
    if trials <= 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials > 0 (got {successes}/{trials})")
    p = successes / trials
    z2n = z * z / trials
    centre = (p + z2n / 2) / (1 + z2n)
    half = z * math.sqrt(p * (1 - p) / trials + z2n / (4 * trials)) / (1 + z2n)
    # at 0 or all successes an end is exactly 0 or 1; rounding would leave p outside
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == trials else min(1.0, centre + half)
    return lo, hi
