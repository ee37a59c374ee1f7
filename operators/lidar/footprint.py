"""The robot's footprint: a polygon in the base frame that scan returns must not fall in.

Returns inside it hit the robot itself (its columns, wheels, cables) and
would look like an obstacle glued to the robot.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from teledora.operators.errors import ConfigError


class FootprintError(ConfigError):
    """The footprint polygon is malformed."""


@dataclass(frozen=True, eq=False)
class Footprint:
    """A simple polygon (x, y) in the base frame, grown by ``padding_m``.

    Args:
        vertices_m: At least three (x, y) corners in order (either direction).
        padding_m: Extra margin: points within this distance of the edge also count as inside.
    """

    vertices_m: np.ndarray
    padding_m: float = 0.0

    def __post_init__(self) -> None:
        v = np.asarray(self.vertices_m, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 2 or v.shape[0] < 3:
            raise FootprintError(f"footprint needs >= 3 (x, y) vertices, got shape {v.shape}")
        if not np.all(np.isfinite(v)):
            raise FootprintError("footprint vertices must be finite")
        if self.padding_m < 0:
            raise FootprintError("padding_m must be >= 0")
        v = v.copy()
        nxt = np.roll(v, -1, axis=0)
        centre = v.mean(axis=0)
        for name, value in (
            ("vertices_m", v), ("padding_m", float(self.padding_m)),
            ("_ax", v[:, 0][None, :]), ("_ay", v[:, 1][None, :]),
            ("_bx", nxt[:, 0][None, :]), ("_by", nxt[:, 1][None, :]), ("_centre", centre),
            ("_reach", float(np.max(np.hypot(*(v - centre).T))) + float(self.padding_m) + 1e-9),
        ):
            object.__setattr__(self, name, value)

    @classmethod
    def rectangle(cls, x_min: float, x_max: float, y_min: float, y_max: float, padding_m: float = 0.0) -> "Footprint":
        """An axis-aligned box footprint."""
        return cls([[x_min, y_min], [x_max, y_min], [x_max, y_max], [x_min, y_max]], padding_m)

    def contains(self, x: npt.ArrayLike, y: npt.ArrayLike) -> np.ndarray:
        """Boolean mask of points inside the (padded) polygon; non-finite points are outside."""
        px = np.asarray(x, dtype=np.float64)
        py = np.asarray(y, dtype=np.float64)
        inside = np.zeros(px.shape, dtype=bool)
        with np.errstate(invalid="ignore"):
            # Cheap reject first: almost every return lies far outside the robot.
            near = np.hypot(px - self._centre[0], py - self._centre[1]) <= self._reach
        if not np.any(near):
            return inside
        fx, fy = px[near][:, None], py[near][:, None]
        ax, ay, bx, by = self._ax, self._ay, self._bx, self._by
        crosses = (ay > fy) != (by > fy)
        with np.errstate(divide="ignore", invalid="ignore"):
            x_cross = ax + (fy - ay) * (bx - ax) / (by - ay)
        hit = (np.count_nonzero(crosses & (fx < x_cross), axis=1) % 2) == 1  # even-odd rule
        if self.padding_m > 0:
            ex, ey = bx - ax, by - ay
            length2 = np.where(ex * ex + ey * ey > 0, ex * ex + ey * ey, 1.0)
            t = np.clip(((fx - ax) * ex + (fy - ay) * ey) / length2, 0.0, 1.0)
            dist = np.hypot(fx - (ax + t * ex), fy - (ay + t * ey)).min(axis=1)
            hit |= dist <= self.padding_m
        inside[near] = hit
        return inside
