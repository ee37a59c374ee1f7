"""Collision proxy pairs: which capsule/box/plane proxies must stay apart, how
far apart they are, and the exact post-step guard built on them.

The IK's collision constraints and its post-step guard both work on the same
list of geom id pairs, built here from named geom groups (``left_arm``,
``body``, ...) and a list of group pairs. Pairs whose bodies are welded
together or are parent and child are dropped (they touch by construction),
the same filtering rule mink's collision limit applies.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import mink
import mujoco
import numpy as np

from teledora.operators.errors import ConfigError


class CollisionPairError(ConfigError):
    """A collision group or pair names something the model does not have."""


@dataclass(frozen=True)
class ProxyDistance:
    """Signed distance between two proxies (negative = penetration)."""

    geom1: str
    geom2: str
    distance_m: float


def _geom_id(model: mujoco.MjModel, name: str) -> int:
    gid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_GEOM, name)
    if gid < 0:
        raise CollisionPairError(f"collision proxy geom {name!r} is not in the model")
    return int(gid)


def _touching_by_construction(model: mujoco.MjModel, g1: int, g2: int) -> bool:
    """Same or parent/child welded bodies, or geoms that never collide (contype/conaffinity)."""
    if not (model.geom_contype[g1] & model.geom_conaffinity[g2] or model.geom_contype[g2] & model.geom_conaffinity[g1]):
        return True
    w1 = model.body_weldid[model.geom_bodyid[g1]]
    w2 = model.body_weldid[model.geom_bodyid[g2]]
    if w1 == w2:
        return True
    p1 = model.body_weldid[model.body_parentid[w1]]
    p2 = model.body_weldid[model.body_parentid[w2]]
    return bool(w1 == p2 or w2 == p1)


def joint_levers_m(model: mujoco.MjModel, geoms: Sequence[str], joints: Sequence[str]) -> np.ndarray:
    """Per joint, an upper bound on how far any point of ``geoms`` below it lies
    from its anchor (path length through the body tree plus the geom's bounding
    radius). A step ``dq`` then moves no point of these proxies by more than
    ``sum(lever * |dq|)``."""
    levers = np.zeros(len(joints))
    for j, joint in enumerate(joints):
        jid = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint))
        if jid < 0:
            raise CollisionPairError(f"joint {joint!r} is not in the model")
        jbody = int(model.jnt_bodyid[jid])
        for name in geoms:
            g = _geom_id(model, name)
            length = float(np.linalg.norm(model.geom_pos[g])) + float(model.geom_rbound[g]) + float(np.linalg.norm(model.jnt_pos[jid]))
            body = int(model.geom_bodyid[g])
            while body not in (jbody, 0):
                length += float(np.linalg.norm(model.body_pos[body]))
                body = int(model.body_parentid[body])
            if body == jbody:
                levers[j] = max(levers[j], length)
    return levers


class CollisionPairs:
    """Geom id pairs between named groups of proxies.

    Args:
        model: MuJoCo model holding the proxy geoms.
        groups: Group name -> proxy geom names.
        pairs: Group-name pairs whose members must stay apart.

    Raises:
        CollisionPairError: unknown group or geom name, or no pair left.
    """

    def __init__(self, model: mujoco.MjModel, groups: Mapping[str, Sequence[str]], pairs: Sequence[Sequence[str]]) -> None:
        self.model = model
        ids: dict[str, list[int]] = {g: [_geom_id(model, n) for n in names] for g, names in groups.items()}
        found: set[tuple[int, int]] = set()
        self.group_pairs: list[tuple[list[str], list[str]]] = []
        for pair in pairs:
            if len(pair) != 2:
                raise CollisionPairError(f"a collision pair names two groups, got {list(pair)}")
            a, b = pair
            for g in (a, b):
                if g not in ids:
                    raise CollisionPairError(f"collision pair names unknown group {g!r}; known: {sorted(ids)}")
            self.group_pairs.append((list(groups[a]), list(groups[b])))
            for g1, g2 in itertools.product(ids[a], ids[b]):
                if g1 != g2 and not _touching_by_construction(model, g1, g2):
                    found.add((min(g1, g2), max(g1, g2)))
        if not found:
            raise CollisionPairError("no collision pair left after removing proxies that touch by construction")
        self.id_pairs: list[tuple[int, int]] = sorted(found)
        self._fromto = np.empty(6)
        ids_arr = np.array(self.id_pairs, dtype=int)
        self._g1, self._g2 = ids_arr[:, 0], ids_arr[:, 1]
        is_plane = model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE
        plane1, plane2 = is_plane[self._g1], is_plane[self._g2]
        rbound = model.geom_rbound
        bounded = (rbound[self._g1] > 0) & (rbound[self._g2] > 0)
        self._sphere_idx = np.flatnonzero(bounded)
        self._sphere_rsum = (rbound[self._g1] + rbound[self._g2])[bounded]
        plane_idx = np.flatnonzero((plane1 | plane2) & ~bounded)
        self._plane_idx = plane_idx
        self._plane_geom = np.where(plane1[plane_idx], self._g1[plane_idx], self._g2[plane_idx])
        self._plane_other = np.where(plane1[plane_idx], self._g2[plane_idx], self._g1[plane_idx])
        self._plane_rother = rbound[self._plane_other]
        self._always_idx = np.flatnonzero(~bounded & ~(plane1 | plane2))

    def __len__(self) -> int:
        return len(self.id_pairs)

    def distances(self, data: mujoco.MjData, distmax: float = 1.0) -> np.ndarray:
        """Signed distance of every pair (capped at ``distmax``), kinematics already computed."""
        out = np.empty(len(self.id_pairs))
        for k, (g1, g2) in enumerate(self.id_pairs):
            out[k] = mujoco.mj_geomDistance(self.model, data, g1, g2, distmax, self._fromto)
        return out

    def closest(self, data: mujoco.MjData, distmax: float = 1.0) -> ProxyDistance:
        """The pair with the smallest signed distance."""
        d = self.distances(data, distmax)
        k = int(np.argmin(d))
        g1, g2 = self.id_pairs[k]
        name = lambda g: mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_GEOM, g)  # noqa: E731
        return ProxyDistance(name(g1), name(g2), float(d[k]))

    def near(self, data: mujoco.MjData, distmax: float) -> np.ndarray:
        """Indices of pairs that may be closer than ``distmax`` (bounding-sphere
        and plane half-space test; never drops a pair that is that close)."""
        xpos = data.geom_xpos
        keep = [self._always_idx]
        if self._sphere_idx.size:
            diff = xpos[self._g1[self._sphere_idx]] - xpos[self._g2[self._sphere_idx]]
            bound = self._sphere_rsum + distmax
            keep.append(self._sphere_idx[np.einsum("ij,ij->i", diff, diff) <= bound * bound])
        if self._plane_idx.size:
            normal = data.geom_xmat[self._plane_geom][:, [2, 5, 8]]
            height = np.einsum("ij,ij->i", normal, xpos[self._plane_other] - xpos[self._plane_geom])
            keep.append(self._plane_idx[height <= distmax + self._plane_rother])
        return np.concatenate(keep)

    def distances_of(self, data: mujoco.MjData, indices: np.ndarray, distmax: float) -> np.ndarray:
        """Signed distances of the pairs at ``indices`` (capped at ``distmax``)."""
        out = np.empty(len(indices))
        for j, k in enumerate(indices):
            g1, g2 = self.id_pairs[k]
            out[j] = mujoco.mj_geomDistance(self.model, data, g1, g2, distmax, self._fromto)
        return out

    def distances_near(self, data: mujoco.MjData, distmax: float) -> np.ndarray:
        """Like :meth:`distances` but pairs outside the broadphase read ``distmax``."""
        out = np.full(len(self.id_pairs), distmax)
        for k in self.near(data, distmax):
            g1, g2 = self.id_pairs[k]
            out[k] = mujoco.mj_geomDistance(self.model, data, g1, g2, distmax, self._fromto)
        return out

    def min_distance(self, data: mujoco.MjData, distmax: float = 1.0) -> float:
        """Smallest signed distance over all pairs, capped at ``distmax``
        (kinematics already computed)."""
        best = distmax
        for k in self.near(data, distmax):
            g1, g2 = self.id_pairs[k]
            d = mujoco.mj_geomDistance(self.model, data, g1, g2, best, self._fromto)
            if d < best:
                best = d
        return float(best)


class RecordingLimit(mink.Limit):
    """Delegates to a limit and keeps its last constraint (the collision rows
    tell the guard which pairs were inside the detection range)."""

    def __init__(self, inner: mink.Limit) -> None:
        self.inner = inner
        self.last: mink.limits.Constraint | None = None

    def compute_qp_inequalities(self, configuration: mink.Configuration, dt: float) -> mink.limits.Constraint:
        self.last = self.inner.compute_qp_inequalities(configuration, dt)
        return self.last


class CollisionGuard:
    """Exact check of a joint step: no proxy pair may end closer than the guard
    distance unless it is moving apart; an unsafe step is shortened by bisection.

    Args:
        pairs: The proxy pairs (must list the same pairs as ``limit``).
        limit: The QP's collision limit; wrapped so its rows can be read back.
        guard_distance_m: Guard distance, or None to accept every step.
        detection_distance_m: The limit's detection range.
        levers: Per joint of the joint vector, a bound on proxy motion per rad
            (see :func:`joint_levers_m`), or None to always measure every pair.
    """

    def __init__(self, pairs: CollisionPairs, limit: mink.CollisionAvoidanceLimit, guard_distance_m: float | None,
                 detection_distance_m: float, levers: np.ndarray | None) -> None:
        self.pairs = pairs
        self.rows = RecordingLimit(limit)
        self.guard = guard_distance_m
        self.detection = detection_distance_m
        self.levers = levers
        ours = {p: k for k, p in enumerate(pairs.id_pairs)}
        theirs = [tuple(p) for p in limit.geom_id_pairs]
        # the QP's rows can stand in for a broadphase only when both list the same pairs
        self.row_to_pair = np.array([ours[p] for p in theirs]) if set(theirs) == set(ours) else None

    def _fast_accept(self, q_from: np.ndarray, q_to: np.ndarray, data: mujoco.MjData) -> float | None:
        """Min distance when the step is provably fine from the QP's rows alone, else None."""
        rows = self.rows.last
        if self.levers is None or self.row_to_pair is None or rows is None or rows.h is None or self.guard is None:
            return None
        motion = float(self.levers @ np.abs(q_to - q_from))
        if motion >= self.detection - self.guard:
            return None  # something outside the detection range could get close
        d_near = self.pairs.distances_of(data, self.row_to_pair[np.isfinite(rows.h)], self.guard + 1e-6)
        if d_near.size == 0:
            return self.detection
        return float(d_near.min()) if d_near.min() >= self.guard else None

    def check(self, q_from: np.ndarray, q_to: np.ndarray,
              move: Callable[[np.ndarray], mujoco.MjData]) -> tuple[np.ndarray, float, float]:
        """Returns (q, fraction of the step kept, min distance seen near the guard
        distance); ``move(q)`` sets the kinematics to q and returns the data. The
        kinematics are left at the returned q."""
        data = move(q_to)
        if self.guard is None:
            return q_to, 1.0, float("nan")
        fast = self._fast_accept(q_from, q_to, data)
        if fast is not None:
            return q_to, 1.0, fast
        guard, distmax = self.guard, self.guard + 1e-6
        d_to = self.pairs.distances_near(data, distmax)
        if d_to.min() >= guard:
            return q_to, 1.0, float(d_to.min())
        d_from = self.pairs.distances_near(move(q_from), distmax)

        def safe(d: np.ndarray) -> bool:
            return bool(np.all((d >= guard) | (d >= d_from)))

        if safe(d_to):
            move(q_to)
            return q_to, 1.0, float(d_to.min())
        lo, hi = 0.0, 1.0
        for _ in range(12):
            mid = 0.5 * (lo + hi)
            if safe(self.pairs.distances_near(move(q_from + mid * (q_to - q_from)), distmax)):
                lo = mid
            else:
                hi = mid
        q = q_from + lo * (q_to - q_from)
        return q, lo, float(self.pairs.distances_near(move(q), distmax).min())
