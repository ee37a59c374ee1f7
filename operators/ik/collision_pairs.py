"""Collision proxy pairs: which geoms must stay apart, read from the compiled
model, and how far apart they are.

The pair list is not written by hand. It is every geom pair that MuJoCo's own
collision filter lets through, computed from the compiled model with the
filter's rules:

* the two geoms' ``contype`` / ``conaffinity`` bitmasks must match;
* geoms on the same rigid body, or on bodies welded together, never collide;
* geoms on a parent and a child body (after welding) never collide, unless
  one of them is the world;
* body pairs named in an ``<exclude>`` element never collide;
* geom pairs named in a ``<pair>`` element always do.

From that list the IK drops the pairs whose relative pose none of its joints
changes (the base against the floor, the lift carriage against the column):
the IK cannot move them, and they are the model's business.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Sequence

import mujoco
import numpy as np

from teledora.operators.errors import ConfigError


class CollisionPairError(ConfigError):
    """A collision set-up names something the model does not have, or leaves no pair."""


@dataclass(frozen=True)
class ProxyDistance:
    """Signed distance between two proxies (negative = penetration)."""

    geom1: str
    geom2: str
    distance_m: float


def filter_allowed_pairs(model: mujoco.MjModel) -> list[tuple[int, int]]:
    """Every geom id pair (g1 < g2) that MuJoCo's collision filter lets through.

    Mirrors the rules of MuJoCo's broadphase filter (see the module docstring);
    ``tests/operators/ik/test_collision_model.py`` checks it against
    ``mj_collision`` itself.
    """
    filter_parent = not (model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT)
    excluded = {int(s) for s in model.exclude_signature}
    contype, conaffinity = model.geom_contype, model.geom_conaffinity
    weld = model.body_weldid
    pairs: set[tuple[int, int]] = set()
    colliding = [g for g in range(model.ngeom) if contype[g] or conaffinity[g]]
    for g1, g2 in itertools.combinations(colliding, 2):
        if not (contype[g1] & conaffinity[g2] or contype[g2] & conaffinity[g1]):
            continue
        b1, b2 = int(model.geom_bodyid[g1]), int(model.geom_bodyid[g2])
        w1, w2 = int(weld[b1]), int(weld[b2])
        if w1 == w2:
            continue
        if filter_parent and w1 != 0 and w2 != 0:
            if w1 == weld[model.body_parentid[w2]] or w2 == weld[model.body_parentid[w1]]:
                continue
        lo, hi = min(b1, b2), max(b1, b2)
        if (lo << 16) + hi in excluded:
            continue
        pairs.add((g1, g2))
    for g1, g2 in zip(model.pair_geom1, model.pair_geom2):
        pairs.add((int(min(g1, g2)), int(max(g1, g2))))
    return sorted(pairs)


def moving_dofs(model: mujoco.MjModel, body: int) -> set[int]:
    """The dofs whose motion moves ``body`` (every joint on its path to the world)."""
    dofs: set[int] = set()
    while body != 0:
        start, count = int(model.body_dofadr[body]), int(model.body_dofnum[body])
        dofs.update(range(start, start + count))
        body = int(model.body_parentid[body])
    return dofs


def pairs_moved_by(model: mujoco.MjModel, pairs: Sequence[tuple[int, int]], joints: Sequence[str]) -> list[tuple[int, int]]:
    """The pairs whose relative pose at least one of ``joints`` changes."""
    dofs = set()
    for name in joints:
        jid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            raise CollisionPairError(f"joint {name!r} is not in the model")
        dofs.add(int(model.jnt_dofadr[jid]))
    per_body: dict[int, set[int]] = {}

    def of(geom: int) -> set[int]:
        body = int(model.geom_bodyid[geom])
        if body not in per_body:
            per_body[body] = moving_dofs(model, body) & dofs
        return per_body[body]

    return [(g1, g2) for g1, g2 in pairs if of(g1) ^ of(g2)]


def _joint_id(model: mujoco.MjModel, joint: str) -> int:
    jid = int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, joint))
    if jid < 0:
        raise CollisionPairError(f"joint {joint!r} is not in the model")
    return jid


def geom_lever_m(model: mujoco.MjModel, geom: int, jid: int) -> float | None:
    """How far a unit move of joint ``jid`` can move any point of ``geom``, or
    None when the joint is not above the geom. A hinge: an upper bound on the
    point's distance from its axis (the path length through the body tree
    plus the geom's bounding radius), so a turn by dq moves it by at most
    lever * |dq|. A slide: 1."""
    jbody = int(model.jnt_bodyid[jid])
    body = int(model.geom_bodyid[geom])
    length = float(np.linalg.norm(model.geom_pos[geom])) + float(model.geom_rbound[geom]) + float(np.linalg.norm(model.jnt_pos[jid]))
    while body not in (jbody, 0):
        length += float(np.linalg.norm(model.body_pos[body]))
        body = int(model.body_parentid[body])
    if body != jbody:
        return None
    return 1.0 if model.jnt_type[jid] == mujoco.mjtJoint.mjJNT_SLIDE else length


def joint_levers_m(model: mujoco.MjModel, geoms: Sequence[int], joints: Sequence[str]) -> np.ndarray:
    """Per joint, the largest :func:`geom_lever_m` over ``geoms``: a step ``dq``
    moves no point of these geoms by more than ``sum(lever * |dq|)``."""
    levers = np.zeros(len(joints))
    for j, joint in enumerate(joints):
        jid = _joint_id(model, joint)
        for g in geoms:
            lever = geom_lever_m(model, g, jid)
            if lever is not None:
                levers[j] = max(levers[j], lever)
    return levers


def pair_levers_m(model: mujoco.MjModel, id_pairs: Sequence[tuple[int, int]], joints: Sequence[str]) -> np.ndarray:
    """Per pair and joint, how much a unit move of the joint can change the
    pair's distance: the lever of the geom it moves, or 0 when it moves both
    (they turn together) or neither. Shape (pairs, joints); the distance
    at q differs from the distance at q0 by at most ``levers @ |q - q0|``."""
    levers = np.zeros((len(id_pairs), len(joints)))
    jids = [_joint_id(model, joint) for joint in joints]
    for k, (g1, g2) in enumerate(id_pairs):
        for j, jid in enumerate(jids):
            l1, l2 = geom_lever_m(model, g1, jid), geom_lever_m(model, g2, jid)
            if (l1 is None) != (l2 is None):
                levers[k, j] = l1 if l1 is not None else l2
    return levers


class CollisionPairs:
    """Geom id pairs that must stay apart, with a bounding-sphere broadphase and
    exact signed distances (``mj_geomDistance``).

    Args:
        model: MuJoCo model holding the proxy geoms.
        id_pairs: Geom id pairs.

    Raises:
        CollisionPairError: no pair, or a geom id the model does not have.
    """

    def __init__(self, model: mujoco.MjModel, id_pairs: Sequence[tuple[int, int]]) -> None:
        if not id_pairs:
            raise CollisionPairError("no collision pair")
        ids = np.array(sorted({(min(a, b), max(a, b)) for a, b in id_pairs}), dtype=int)
        if ids.min() < 0 or ids.max() >= model.ngeom or np.any(ids[:, 0] == ids[:, 1]):
            raise CollisionPairError(f"collision pairs must name two different geoms of the model (0..{model.ngeom - 1})")
        self.model = model
        self.id_pairs: list[tuple[int, int]] = [(int(a), int(b)) for a, b in ids]
        self._fromto = np.empty(6)
        self._g1, self._g2 = ids[:, 0], ids[:, 1]
        # python ints, looked up once: the distance loops run thousands of times a second
        self._g1_list, self._g2_list = self._g1.tolist(), self._g2.tolist()
        is_plane = model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE
        plane1, plane2 = is_plane[self._g1], is_plane[self._g2]
        rbound = model.geom_rbound
        bounded = (rbound[self._g1] > 0) & (rbound[self._g2] > 0)
        self._sphere_idx = np.flatnonzero(bounded)
        self._sphere_g1, self._sphere_g2 = self._g1[self._sphere_idx], self._g2[self._sphere_idx]
        self._sphere_rsum = (rbound[self._g1] + rbound[self._g2])[bounded]
        plane_idx = np.flatnonzero((plane1 | plane2) & ~bounded)
        self._plane_idx = plane_idx
        self._plane_geom = np.where(plane1[plane_idx], self._g1[plane_idx], self._g2[plane_idx])
        self._plane_other = np.where(plane1[plane_idx], self._g2[plane_idx], self._g1[plane_idx])
        self._plane_rother = rbound[self._plane_other]
        self._always_idx = np.flatnonzero(~bounded & ~(plane1 | plane2))
        # the order near() lists the pairs in
        self.scan_order = np.concatenate([self._always_idx, self._sphere_idx, self._plane_idx])
        self._ones3 = np.ones(3)

    @classmethod
    def from_model(cls, model: mujoco.MjModel, joints: Sequence[str]) -> "CollisionPairs":
        """The pairs MuJoCo's filter allows that ``joints`` can move (see module docstring)."""
        pairs = pairs_moved_by(model, filter_allowed_pairs(model), joints)
        if not pairs:
            raise CollisionPairError("the model's collision filter leaves no pair that these joints move")
        return cls(model, pairs)

    def __len__(self) -> int:
        return len(self.id_pairs)

    @property
    def geoms(self) -> list[int]:
        """Every geom id that appears in a pair."""
        return sorted({g for pair in self.id_pairs for g in pair})

    def name(self, geom: int) -> str:
        return mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_GEOM, geom) or f"geom{geom}"

    def distance(self, data: mujoco.MjData, k: int, distmax: float) -> float:
        """Signed distance of pair ``k`` (capped at ``distmax``), kinematics already computed."""
        g1, g2 = self.id_pairs[k]
        return float(mujoco.mj_geomDistance(self.model, data, g1, g2, distmax, self._fromto))

    def distances(self, data: mujoco.MjData, distmax: float = 1.0) -> np.ndarray:
        """Signed distance of every pair (capped at ``distmax``), kinematics already computed."""
        return np.array([self.distance(data, k, distmax) for k in range(len(self.id_pairs))])

    def closest(self, data: mujoco.MjData, distmax: float = 1.0) -> ProxyDistance:
        """The pair with the smallest signed distance."""
        d = self.distances(data, distmax)
        k = int(np.argmin(d))
        g1, g2 = self.id_pairs[k]
        return ProxyDistance(self.name(g1), self.name(g2), float(d[k]))

    def near(self, data: mujoco.MjData, distmax: float) -> np.ndarray:
        """Indices of pairs that may be closer than ``distmax`` (bounding-sphere
        and plane half-space test; never drops a pair that is that close)."""
        # few, in-place numpy calls: each call costs microseconds of its own,
        # and the IK's guard asks this several times per tick
        xpos = data.geom_xpos
        keep = []
        if self._always_idx.size:
            keep.append(self._always_idx)
        if self._sphere_idx.size:
            diff = xpos.take(self._sphere_g1, 0)
            diff -= xpos.take(self._sphere_g2, 0)
            diff *= diff
            bound = self._sphere_rsum + distmax
            bound *= bound
            keep.append(self._sphere_idx[diff @ self._ones3 <= bound])
        if self._plane_idx.size:
            offset = xpos.take(self._plane_other, 0)
            offset -= xpos.take(self._plane_geom, 0)
            offset *= data.geom_xmat.take(self._plane_geom, 0)[:, 2::3]  # the plane's normal: its z axis
            keep.append(self._plane_idx[offset @ self._ones3 <= distmax + self._plane_rother])
        return keep[0] if len(keep) == 1 else np.concatenate(keep)

    def distances_of(self, data: mujoco.MjData, indices: np.ndarray, distmax: float) -> np.ndarray:
        """Signed distances of the pairs at ``indices`` (capped at ``distmax``)."""
        model, fromto, g1, g2, distance = self.model, self._fromto, self._g1_list, self._g2_list, mujoco.mj_geomDistance
        return np.array([distance(model, data, g1[k], g2[k], distmax, fromto) for k in np.asarray(indices).tolist()],
                        dtype=float)

    def distances_near(self, data: mujoco.MjData, distmax: float) -> np.ndarray:
        """Like :meth:`distances` but pairs outside the broadphase read ``distmax``."""
        out = np.full(len(self.id_pairs), distmax)
        near = self.near(data, distmax)
        out[near] = self.distances_of(data, near, distmax)
        return out

    def moved_by(self, joints: Sequence[str]) -> np.ndarray:
        """Indices of the pairs whose relative pose one of ``joints`` changes."""
        moved = set(pairs_moved_by(self.model, self.id_pairs, joints))
        return np.array([k for k, p in enumerate(self.id_pairs) if p in moved], dtype=int)

    def min_distance(self, data: mujoco.MjData, distmax: float = 1.0, among: np.ndarray | None = None) -> float:
        """Smallest signed distance over all pairs (or the pairs at indices
        ``among``), capped at ``distmax`` (kinematics already computed)."""
        best = distmax
        near = self.near(data, distmax)
        if among is not None:
            near = np.intersect1d(near, among, assume_unique=False)
        model, fromto, g1, g2, distance = self.model, self._fromto, self._g1_list, self._g2_list, mujoco.mj_geomDistance
        for k in near.tolist():
            d = distance(model, data, g1[k], g2[k], best, fromto)
            if d < best:
                best = d
        return float(best)
