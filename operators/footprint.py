"""The robot's footprint: a polygon in the base frame that scan returns must not fall in.

Returns inside it hit the robot itself (its columns, wheels, cables) and
would look like an obstacle glued to the robot.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


class FootprintError(ValueError):
    """The footprint polygon is malformed."""


class Footprint:
    """A simple polygon (x, y) in the base frame, grown by ``padding_m``.

    Args:
        vertices: At least three (x, y) corners in order (either direction).
        padding_m: Extra margin: points within this distance of the edge also count as inside.
    """

    def __init__(self, vertices: npt.ArrayLike, padding_m: float = 0.0) -> None:
        v = np.asarray(vertices, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 2 or v.shape[0] < 3:
            raise FootprintError(f"footprint needs >= 3 (x, y) vertices, got shape {v.shape}")
        if not np.all(np.isfinite(v)):
            raise FootprintError("footprint vertices must be finite")
        if padding_m < 0:
            raise FootprintError("padding_m must be >= 0")
        self.vertices = v.copy()
        self.padding_m = float(padding_m)

    @classmethod
    def rectangle(cls, x_min: float, x_max: float, y_min: float, y_max: float, padding_m: float = 0.0) -> "Footprint":
        """An axis-aligned box footprint."""
        return cls([[x_min, y_min], [x_max, y_min], [x_max, y_max], [x_min, y_max]], padding_m)

    def contains(self, x: npt.ArrayLike, y: npt.ArrayLike) -> np.ndarray:
        """Boolean mask of points inside the (padded) polygon; non-finite points are outside."""
        px = np.asarray(x, dtype=np.float64)
        py = np.asarray(y, dtype=np.float64)
        inside = np.zeros(px.shape, dtype=bool)
        finite = np.isfinite(px) & np.isfinite(py)
        if not np.any(finite):
            return inside
        fx, fy = px[finite], py[finite]
        v = self.vertices
        a = v
        b = np.roll(v, -1, axis=0)
        hit = np.zeros(fx.shape, dtype=bool)
        for (ax, ay), (bx, by) in zip(a, b):  # even-odd rule, one edge at a time
            crosses = (ay > fy) != (by > fy)
            with np.errstate(divide="ignore", invalid="ignore"):
                x_cross = ax + (fy - ay) * (bx - ax) / (by - ay)
            hit ^= crosses & (fx < x_cross)
        if self.padding_m > 0:
            hit |= self._edge_distance(fx, fy) <= self.padding_m
        inside[finite] = hit
        return inside

    def _edge_distance(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        v = self.vertices
        best = np.full(x.shape, np.inf)
        for (ax, ay), (bx, by) in zip(v, np.roll(v, -1, axis=0)):
            ex, ey = bx - ax, by - ay
            length2 = ex * ex + ey * ey
            t = np.clip(((x - ax) * ex + (y - ay) * ey) / length2, 0.0, 1.0) if length2 > 0 else 0.0
            best = np.minimum(best, np.hypot(x - (ax + t * ex), y - (ay + t * ey)))
        return best
