"""Software limits on grip targets: a workspace box, a reach cylinder around
each shoulder, and caps on how fast a target may move.

Targets outside the box or farther (horizontally) than ``max_radius_m`` from
their shoulder's vertical axis are projected onto the allowed region; the
caller reports the projection distance. The speed limiter then moves a shaped
target towards the (projected) operator target at no more than the linear
and angular caps (both scaled down by ``slow_scale`` in slow mode), so a jump
of the operator's hand never becomes a jump of the IK target.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError
from teledora.operators.geometry import quat_angle, quat_normalize, quat_slerp
from teledora.operators.model.sides import SIDES
from teledora.operators.config import config_from_mapping


class WorkspaceError(TeledoraError, ValueError):
    """Inconsistent workspace configuration or an invalid target."""


@dataclass(frozen=True, eq=False)
class WorkspaceConfig:
    box_min_m: np.ndarray
    box_max_m: np.ndarray
    shoulder_xy_m: dict[str, np.ndarray]
    max_radius_m: float
    max_linear_speed_m_s: float
    max_angular_speed_rad_s: float
    slow_scale: float
    max_target_distance_m: float

    def __post_init__(self) -> None:
        if self.box_min_m.shape != (3,) or self.box_max_m.shape != (3,) or np.any(self.box_min_m >= self.box_max_m):
            raise WorkspaceError("box_min_m and box_max_m need 3 values each, min < max")
        if set(self.shoulder_xy_m) != set(SIDES) or any(v.shape != (2,) for v in self.shoulder_xy_m.values()):
            raise WorkspaceError(f"shoulder_xy_m needs an (x, y) for each of {list(SIDES)}")
        for s, xy in self.shoulder_xy_m.items():
            if not (np.all(xy >= self.box_min_m[:2]) and np.all(xy <= self.box_max_m[:2])):
                raise WorkspaceError(f"the {s} shoulder axis must lie inside the box")
        if not (self.max_radius_m > 0 and self.max_linear_speed_m_s > 0 and self.max_angular_speed_rad_s > 0):
            raise WorkspaceError("radius and speed caps must be > 0")
        if not 0 < self.slow_scale <= 1:
            raise WorkspaceError("slow_scale must be in (0, 1]")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "WorkspaceConfig":
        """The ``workspace`` section, checked."""
        return config_from_mapping(cls, data, "workspace", WorkspaceError)


@dataclass(frozen=True)
class ProjectedPosition:
    position: np.ndarray
    projection_m: float  # how far the target was moved (0 when inside)


class WorkspaceLimits:
    """Projects grip target positions into the box ∩ reach cylinder."""

    def __init__(self, config: WorkspaceConfig) -> None:
        self.config = config

    def contains(self, side: str, position: npt.ArrayLike, tol: float = 1e-9) -> bool:
        p = np.asarray(position, dtype=float)
        c = self.config
        in_box = bool((p >= c.box_min_m - tol).all() and (p <= c.box_max_m + tol).all())
        r = float(np.linalg.norm(p[:2] - c.shoulder_xy_m[side]))
        return in_box and r <= c.max_radius_m + tol

    def project(self, side: str, position: npt.ArrayLike) -> ProjectedPosition:
        """Nearest allowed position and how far it is from the request.

        The cylinder is vertical, so height is clamped on its own and the
        horizontal part is the nearest point of rectangle ∩ disk: the best
        feasible candidate among the radial projection onto the circle, the
        projections onto each rectangle edge (clipped to the part inside the
        disk) and the circle/edge intersections.

        Raises:
            WorkspaceError: unknown side or non-finite position.
        """
        if side not in SIDES:
            raise WorkspaceError(f"unknown arm side {side!r}")
        p0 = np.asarray(position, dtype=float)
        if p0.shape != (3,) or not np.isfinite(p0).all():
            raise WorkspaceError("target position must be 3 finite values")
        if self.contains(side, p0):
            return ProjectedPosition(p0.copy(), 0.0)
        c = self.config
        out = p0.copy()
        out[2] = float(np.clip(p0[2], c.box_min_m[2], c.box_max_m[2]))
        out[:2] = self._nearest_xy(p0[:2], c.shoulder_xy_m[side])
        return ProjectedPosition(out, float(np.linalg.norm(out - p0)))

    def _nearest_xy(self, p: np.ndarray, centre: np.ndarray) -> np.ndarray:
        c = self.config
        lo, hi, r = c.box_min_m[:2], c.box_max_m[:2], c.max_radius_m

        def feasible(x: np.ndarray) -> bool:
            return bool(np.all(x >= lo - 1e-12) and np.all(x <= hi + 1e-12) and np.linalg.norm(x - centre) <= r + 1e-12)

        candidates = []
        if feasible(p):
            return p.copy()
        d = p - centre
        n = float(np.linalg.norm(d))
        candidates.append(centre + (d / n) * r if n > 0 else centre + np.array([r, 0.0]))
        for axis in (0, 1):
            other = 1 - axis
            for bound in (lo[axis], hi[axis]):
                off = bound - centre[axis]
                if abs(off) > r:
                    continue
                half = float(np.sqrt(r * r - off * off))
                seg_lo = max(lo[other], centre[other] - half)
                seg_hi = min(hi[other], centre[other] + half)
                if seg_lo > seg_hi:
                    continue
                for t in (float(np.clip(p[other], seg_lo, seg_hi)), seg_lo, seg_hi):
                    x = np.empty(2)
                    x[axis], x[other] = bound, t
                    candidates.append(x)
        best = min((x for x in candidates if feasible(x)), key=lambda x: float(np.linalg.norm(x - p)))
        return best


@dataclass(frozen=True)
class ShapedTarget:
    position: np.ndarray
    orientation: np.ndarray  # (x, y, z, w)
    rate_limited: bool


class CartesianSpeedLimiter:
    """Moves one arm's shaped target towards the requested one under speed caps."""

    def __init__(self, config: WorkspaceConfig) -> None:
        self.config = config
        self._pos: np.ndarray | None = None
        self._quat: np.ndarray | None = None

    @property
    def initialized(self) -> bool:
        return self._pos is not None

    def reset(self, position: npt.ArrayLike, orientation_xyzw: npt.ArrayLike) -> None:
        """Restarts from a pose (e.g. the arm's current grip pose when it is re-enabled)."""
        self._pos = np.asarray(position, dtype=float).copy()
        self._quat = quat_normalize(orientation_xyzw)

    def step(self, position: npt.ArrayLike, orientation_xyzw: npt.ArrayLike, dt: float, slow: bool) -> ShapedTarget:
        """Advances by ``dt`` seconds towards the request.

        Raises:
            WorkspaceError: used before ``reset`` or with ``dt < 0``.
        """
        if self._pos is None or self._quat is None:
            raise WorkspaceError("speed limiter used before reset()")
        if dt < 0:
            raise WorkspaceError(f"dt must be >= 0, got {dt}")
        scale = self.config.slow_scale if slow else 1.0
        max_lin = self.config.max_linear_speed_m_s * scale * dt
        max_ang = self.config.max_angular_speed_rad_s * scale * dt
        goal_p = np.asarray(position, dtype=float)
        goal_q = quat_normalize(orientation_xyzw)
        delta = goal_p - self._pos
        dist = float(np.linalg.norm(delta))
        limited = False
        if dist > max_lin:
            self._pos = self._pos + delta * (max_lin / dist)
            limited = True
        else:
            self._pos = goal_p.copy()
        angle = quat_angle(self._quat, goal_q)
        if angle > max_ang:
            self._quat = quat_normalize(quat_slerp(self._quat, goal_q, max_ang / angle))
            limited = True
        else:
            self._quat = goal_q
        return ShapedTarget(self._pos.copy(), self._quat.copy(), limited)
