"""Exact post-step collision check: a joint step may not leave any proxy pair
closer than the guard distance unless that pair is not getting closer; an
unsafe step is shortened by bisection (or not taken).

The QP's clearance rows hold the minimum distance only to first order; the
joint rotation over one step bends the proxies' paths, and this check, with
exact distances at the end of the step, removes that residue.
"""

from __future__ import annotations

from typing import Callable, Sequence

import mujoco
import numpy as np

from teledora.operators.ik.clearance_limit import ClearanceLimit
from teledora.operators.ik.collision_pairs import CollisionPairs
from teledora.operators.ik.distance_bounds import DistanceBounds


NEAR_BAND_OF_MARGIN = 0.25


def _passes(d: np.ndarray, d_from: np.ndarray, guard: float) -> bool:
    """Every pair at least ``guard`` apart, or no closer than it was (``d_from``)."""
    return bool(np.all((d >= guard) | (d >= d_from)))


class CollisionGuard:
    """Exact check of a joint step against every pair of ``pairs``.

    Args:
        pairs: The proxy pairs (the same the QP's rows cover).
        limit: The QP's clearance rows: which pairs were inside the detection
            range at the start of the step.
        guard_distance_m: Guard distance, or None to accept every step.
        levers: Per joint of the joint vector, a bound on proxy motion per rad
            (see :func:`collision_pairs.joint_levers_m`), or None to always
            measure every pair.
        bounds: Per-pair distance bounds carried between checks, or None to
            run the broadphase on every pair at every check (the same
            distances either way).
    """

    def __init__(self, pairs: CollisionPairs, limit: ClearanceLimit, guard_distance_m: float | None,
                 levers: np.ndarray | None, bounds: DistanceBounds | None = None) -> None:
        self.pairs = pairs
        self.bounds = bounds
        self.limit = limit
        self.guard = guard_distance_m
        self.detection = limit.detection_distance_m
        self.levers = levers
        # distances are measured (and reported) up to this far above the guard
        # distance: a quarter of the band above it the rows aim for, so pairs
        # held in contact at the rows' aim (guard + margin) stay outside it
        self.band = max(NEAR_BAND_OF_MARGIN * limit.margin_m, 1e-6)

    def _fast_accept(self, q_from: np.ndarray, q_to: np.ndarray, data: mujoco.MjData) -> float | None:
        """Min distance when the step is provably fine from the QP's rows alone, else None."""
        if self.levers is None or self.guard is None:
            return None
        motion = float(self.levers @ np.abs(q_to - q_from))
        if motion >= self.detection - self.guard:
            return None  # something outside the detection range could get close
        if self.limit.active.size == 0:
            return self.detection
        d_near = self.pairs.distances_of(data, self.limit.active, self.guard + self.band)
        return float(d_near.min()) if d_near.min() >= self.guard else None

    def _distances_near(self, data: mujoco.MjData, distmax: float) -> np.ndarray:
        if self.bounds is None:
            return self.pairs.distances_near(data, distmax)
        return self.bounds.distances_near(data, distmax)

    def check(self, q_from: np.ndarray, q_to: np.ndarray,
              move: Callable[[np.ndarray], mujoco.MjData]) -> tuple[np.ndarray, float, float]:
        """Returns (q, fraction of the step kept, min distance seen, capped at
        the guard distance plus the band); ``move(q)`` sets the kinematics to q and returns the data. The
        kinematics are left at the returned q."""
        data = move(q_to)
        if self.guard is None:
            return q_to, 1.0, float("nan")
        fast = self._fast_accept(q_from, q_to, data)
        if fast is not None:
            return q_to, 1.0, fast
        guard, distmax = self.guard, self.guard + self.band
        d_to = self._distances_near(data, distmax)
        if d_to.min() >= guard:
            return q_to, 1.0, float(d_to.min())
        d_from = self._distances_near(move(q_from), distmax)

        def safe(d: np.ndarray) -> bool:
            return _passes(d, d_from, guard)

        if safe(d_to):
            move(q_to)
            return q_to, 1.0, float(d_to.min())
        lo, hi = 0.0, 1.0
        for _ in range(10):
            mid = 0.5 * (lo + hi)
            if safe(self._distances_near(move(q_from + mid * (q_to - q_from)), distmax)):
                lo = mid
            else:
                hi = mid
        q = q_from + lo * (q_to - q_from)
        return q, lo, float(self._distances_near(move(q), distmax).min())

    def path_passes(self, q_from: np.ndarray, path: Sequence[np.ndarray],
                    move: Callable[[np.ndarray], mujoco.MjData]) -> tuple[bool, list[float]]:
        """Whether :meth:`check` from ``q_from`` would keep every point of
        ``path`` whole, and the min distance it would report for each point
        (up to the first that fails). A yes/no answer: no bisection, and the
        distances at ``q_from`` are measured once for the whole path."""
        if self.guard is None:
            return True, [float("nan")] * len(path)
        if self.bounds is not None:
            return self._path_passes_bounded(q_from, path, move)
        guard, distmax = self.guard, self.guard + self.band
        d_from: np.ndarray | None = None
        closest: list[float] = []
        for q in path:
            data = move(q)
            fast = self._fast_accept(q_from, q, data)
            if fast is not None:
                closest.append(fast)
                continue
            d_to = self._distances_near(data, distmax)
            if d_to.min() < guard:
                if d_from is None:
                    d_from = self._distances_near(move(q_from), distmax)
                if not _passes(d_to, d_from, guard):
                    return False, closest
            closest.append(float(d_to.min()))
        return True, closest

    def _path_passes_bounded(self, q_from: np.ndarray, path: Sequence[np.ndarray],
                             move: Callable[[np.ndarray], mujoco.MjData]) -> tuple[bool, list[float]]:
        """:meth:`path_passes` with the distance bounds: the bounds of every
        point are worked out at once, and a point runs kinematics and exact
        distances only for the pairs that may be within the band there."""
        guard, distmax = self.guard, self.guard + self.band
        bounds = self.bounds
        bounds.sync(move(q_from).qpos)  # the joints the path leaves where they are
        points = np.asarray(path)
        d_from: np.ndarray | None = None
        closest: list[float] = []
        for q, unsure in zip(points, bounds.unsure_along(points, distmax)):
            if not unsure.size:
                closest.append(distmax)
                continue
            d = self.pairs.distances_of(move(q), unsure, bounds.reach_m)
            bounds.record(unsure, d, q)
            nearest = min(float(d.min()), distmax)
            if nearest < guard:
                if d_from is None:
                    d_from = bounds.distances_near(move(q_from), distmax)
                d_to = np.full(len(d_from), distmax)
                d_to[unsure] = np.minimum(d, distmax)
                if not _passes(d_to, d_from, guard):
                    return False, closest
            closest.append(nearest)
        return True, closest

    def check_between(self, q_from: np.ndarray, q_a: np.ndarray, q_b: np.ndarray, inner: np.ndarray,
                      move: Callable[[np.ndarray], mujoco.MjData]) -> bool:
        """Whether the configurations ``inner``, between two points of a path
        that each passed :meth:`check` from ``q_from``, pass it too on the pairs
        that are within the band above the guard distance at either end (the
        ones a bend of the path between the points can take inside it)."""
        if self.guard is None:
            return True
        distmax = self.guard + self.band
        watch: set[int] = set()
        for q in (q_a, q_b):
            data = move(q)
            near = self.pairs.near(data, distmax)
            watch.update(int(k) for k in near[self.pairs.distances_of(data, near, distmax) < distmax])
        if not watch:
            return True
        pairs = np.array(sorted(watch))
        d_from = self.pairs.distances_of(move(q_from), pairs, distmax)
        for q in inner:
            if not _passes(self.pairs.distances_of(move(q), pairs, distmax), d_from, self.guard):
                return False
        return True
