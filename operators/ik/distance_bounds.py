"""Lower bounds on the proxy pairs' distances, carried from the configuration
where each pair was last measured to nearby ones, so that a check measures
exactly only the pairs that could be close.

A pair's distance depends on its two geoms' relative pose alone. A joint
above both turns them together and changes nothing; a joint above one moves
each of its points by at most the joint's lever times its move
(:func:`collision_pairs.pair_levers_m`). So with ``d0`` measured at ``q0``::

    d(q) >= d0 - levers @ |q - q0|

A pair whose bound stays at or above the distance asked for is that far
apart, and a measurement capped there would read the cap: it is not
measured. Every measurement is taken out to ``reach_m`` (it costs the same)
and becomes the pair's new starting point, so a pair measured once stays
unmeasured until the arms have moved far enough to bring it near.

The guard checks a plan's path point by point, every point a small move from
the one before; most pairs the bounding spheres let through are flat plates
a hand's width apart, and the bounds keep them out.
"""

from __future__ import annotations

from typing import Sequence

import mujoco
import numpy as np

from teledora.operators.ik.collision_pairs import CollisionPairs, pair_levers_m


class DistanceBounds:
    """Per pair of ``pairs``, the last exact distance and the values of
    ``joints`` (the arms') it was measured at. The model's other joints (lift,
    base, grippers) are followed by :meth:`sync`: one that moved lowers every
    bound by what it may have moved the pair, so nothing needs measuring again
    at once.

    Args:
        pairs: The proxy pairs.
        joints: The joints a check's configurations differ in (the arms').
        reach_m: How far out a measurement is taken.
    """

    def __init__(self, pairs: CollisionPairs, joints: Sequence[str], reach_m: float = 0.25) -> None:
        model = pairs.model
        self.pairs = pairs
        self.reach_m = float(reach_m)
        self.levers = pair_levers_m(model, pairs.id_pairs, joints)
        ids = {int(mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j)) for j in joints}
        self._adr = np.array([model.jnt_qposadr[mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, j)] for j in joints])
        scalar = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        others = [j for j in range(model.njnt) if j not in ids and int(model.jnt_type[j]) in scalar]
        self._other_levers = pair_levers_m(model, pairs.id_pairs, [model.joint(j).name for j in others])
        self._other_adr = np.array([model.jnt_qposadr[j] for j in others], dtype=int)
        # ball and free joints: no lever; a change of one forgets every bound
        loose = np.ones(model.nq, dtype=bool)
        loose[self._adr] = False
        loose[self._other_adr] = False
        self._loose_adr = np.flatnonzero(loose)
        self._other_q: np.ndarray | None = None
        self._loose_q: np.ndarray | None = None
        n = len(pairs)
        self._at = np.zeros((n, len(joints)))  # where each pair was measured
        self._d = np.full(n, -np.inf)  # what it read there (-inf: not yet)
        self._moved = np.empty((n, len(joints)))  # scratch
        self._ones = np.ones(len(joints))
        self.measured = 0  # exact distances taken

    def forget(self) -> None:
        self._d[:] = -np.inf

    def sync(self, qpos: np.ndarray) -> None:
        """Follows the joints outside ``joints`` to their values in ``qpos``."""
        other = qpos.take(self._other_adr)
        if self._other_q is not None and (other != self._other_q).any():
            self._d -= self._other_levers @ np.abs(other - self._other_q)
        self._other_q = other
        if self._loose_adr.size:
            loose = qpos.take(self._loose_adr)
            if self._loose_q is not None and (loose != self._loose_q).any():
                self.forget()
            self._loose_q = loose

    def lower_bounds(self, q: np.ndarray) -> np.ndarray:
        """Per pair, how close it can be at arm joint values ``q`` (the other
        joints as last synced)."""
        moved = self._moved
        np.subtract(self._at, q, out=moved)
        np.abs(moved, out=moved)
        moved *= self.levers
        return self._d - moved @ self._ones  # a product sums a short row faster than .sum(axis=1)

    def unsure(self, data: mujoco.MjData, distmax: float) -> tuple[np.ndarray, np.ndarray]:
        """The pairs whose bound lies below ``distmax`` at ``data``'s
        configuration (in the order the pairs' broadphase lists them) and its
        arm joint values: what a caller measures and hands to :meth:`record`."""
        self.sync(data.qpos)
        q = data.qpos.take(self._adr)
        order = self.pairs.scan_order
        return order[self.lower_bounds(q).take(order) < distmax], q

    def unsure_along(self, points: np.ndarray, distmax: float) -> list[np.ndarray]:
        """Per row of ``points`` (arm joint values; the other joints as last
        synced), the pairs whose bound lies below ``distmax`` there."""
        points = np.atleast_2d(points)
        lo, hi = points.min(axis=0), points.max(axis=0)
        centre, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
        # a pair clear at the box's centre by more than a move to its corners is
        # clear at every point in the box (the centre halves the spread a point's would give)
        maybe = np.flatnonzero(self.lower_bounds(centre) - self.levers @ half < distmax)
        if not maybe.size:
            return [maybe] * len(points)
        moved = np.abs(self._at[maybe][None, :, :] - points[:, None, :])
        moved *= self.levers[maybe]
        bound = self._d[maybe] - moved @ self._ones
        return [maybe[row < distmax] for row in bound]

    def record(self, indices: np.ndarray, distances: np.ndarray, q: np.ndarray) -> None:
        """Pairs ``indices`` measured ``distances`` (capped at ``reach_m``) at arm joint values ``q``."""
        self.measured += len(indices)
        self._d[indices] = distances
        self._at[indices] = q

    def distances_near(self, data: mujoco.MjData, distmax: float) -> np.ndarray:
        """The same array as ``pairs.distances_near(data, distmax)`` (exact
        distances capped at ``distmax``), measuring only the pairs whose bound
        lies below ``distmax``; kinematics already computed."""
        unsure, q = self.unsure(data, distmax)
        out = np.full(len(self._d), distmax)
        if unsure.size:
            d = self.pairs.distances_of(data, unsure, self.reach_m)
            self.record(unsure, d, q)
            out[unsure] = np.minimum(d, distmax)
        return out
