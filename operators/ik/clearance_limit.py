"""Clearance barrier for the displacement QP: no proxy pair may close more than
a fraction of its remaining gap to the minimum distance in one step.

The IK's QP is written in the joint displacement ``dq`` of one control step
(mink's tasks and limits: ``G dq <= h``). For a pair at signed distance ``d``
with contact normal Jacobian ``n^T J`` (so the distance changes by
``n^T J dq`` to first order), the row is::

    -n^T J dq <= gain * max(d - d_row, -margin),     d_row = d_min + margin

so the linearised distance after the step is at least
``d - gain * (d - d_row) >= d_row`` from above, and a pair inside ``d_row``
is pushed back out by at most ``gain * margin`` per step: the bound is a
distance, like the displacement it limits. The margin (2 mm) keeps the
second-order error of a step (a link sliding along another turns as it
slides) from reaching ``d_min``, where the exact guard would stop the arm. mink's stock ``CollisionAvoidanceLimit`` puts
``gain * (d - d_min) / dt`` on the same displacement, which is a speed: at a
10 ms step it lets a pair close 100 times the remaining gap in one step (400
times at 2.5 ms), so until a pair is already inside ``d_min`` only the speed
caps limit the approach. The linearisation error (joint rotation over one step)
is what is left; the exact post-step guard (:mod:`collision_guard`) removes it.

Rows exist only for pairs closer than the detection distance; the inactive
ones are not sent to the solver.
"""

from __future__ import annotations

import mink
import mujoco
import numpy as np

from teledora.operators.ik.collision_pairs import CollisionPairs
from teledora.operators.ik.distance_bounds import DistanceBounds


class ClearanceLimit(mink.Limit):
    """Displacement-correct collision rows for every pair of ``pairs``.

    Args:
        pairs: The proxy pairs.
        gain: Fraction in (0, 1] of the gap above ``minimum_distance_m`` a pair
            may close in one step.
        minimum_distance_m: Clearance to keep.
        detection_distance_m: Pairs farther apart than this get no row.
        margin_m: The rows aim this far above ``minimum_distance_m``.
        bounds: Distance bounds that spare measuring pairs known to be
            outside the detection range (the same rows either way), or None.

    Attributes:
        active: Indices (into ``pairs.id_pairs``) of the rows of the last call.
        active_distances: Their signed distances at that call.
        relaxed: When True, rows only forbid approach (no push-out); the
            solver retries this way when the push-out rows are infeasible.
    """

    def __init__(self, pairs: CollisionPairs, gain: float, minimum_distance_m: float, detection_distance_m: float,
                 margin_m: float = 0.0, bounds: DistanceBounds | None = None) -> None:
        if not 0 < gain <= 1:
            raise ValueError(f"gain must be in (0, 1], got {gain}")
        if margin_m < 0:
            raise ValueError(f"margin_m must be >= 0, got {margin_m}")
        if not detection_distance_m > minimum_distance_m + margin_m:
            raise ValueError("detection_distance_m must exceed minimum_distance_m + margin_m")
        self.margin_m = float(margin_m)
        self.relaxed = False
        self.pairs = pairs
        self.bounds = bounds
        self.model = pairs.model
        self.gain = float(gain)
        self.minimum_distance_m = float(minimum_distance_m)
        self.detection_distance_m = float(detection_distance_m)
        nv = self.model.nv
        self._fromto = np.empty(6)
        self._from, self._to = self._fromto[:3], self._fromto[3:]  # views, made once
        self._normal = np.empty(3)
        # per pair: its geoms and their bodies, as python ints, looked up once
        self._pair_bodies = [(g1, g2, int(self.model.geom_bodyid[g1]), int(self.model.geom_bodyid[g2]))
                             for g1, g2 in pairs.id_pairs]
        self._jac1 = np.empty((3, nv))
        self._jac2 = np.empty((3, nv))
        self.active = np.zeros(0, dtype=int)
        self.active_distances = np.zeros(0)

    def bound(self, distance_m: np.ndarray | float) -> np.ndarray:
        """Right-hand side of the rows at these distances (a displacement, m)."""
        d = np.asarray(distance_m, dtype=float)
        h = self.gain * np.maximum(d - (self.minimum_distance_m + self.margin_m), -self.margin_m)
        return np.maximum(h, 0.0) if self.relaxed else h

    def compute_qp_inequalities(self, configuration: mink.Configuration, dt: float) -> mink.limits.Constraint:
        """Rows ``G dq <= h`` for the pairs inside the detection range (``dt`` is
        not used: the bound is per step)."""
        model, data = self.model, configuration.data
        distmax = self.detection_distance_m
        fromto, p_from, p_to, normal, jac1, jac2 = self._fromto, self._from, self._to, self._normal, self._jac1, self._jac2
        rows, bounds, active, measured = [], [], [], []
        if self.bounds is None:
            candidates, cap = self.pairs.near(data, distmax), distmax
        else:
            candidates, q = self.bounds.unsure(data, distmax)
            cap = self.bounds.reach_m  # the same distance below distmax, and a bound for later calls
        for k in candidates.tolist():
            g1, g2, b1, b2 = self._pair_bodies[k]
            d = mujoco.mj_geomDistance(model, data, g1, g2, cap, fromto)
            measured.append(d)
            if d >= distmax:
                continue
            np.subtract(p_to, p_from, out=normal)
            mujoco.mju_normalize3(normal)
            mujoco.mj_jac(model, data, jac2, None, p_to, b2)
            mujoco.mj_jac(model, data, jac1, None, p_from, b1)
            row = normal @ (jac2 - jac1)
            # the from-to segment turns round when the geoms overlap
            rows.append(-row if d >= 0 else row)
            bounds.append(d)
            active.append(k)
        if self.bounds is not None:
            self.bounds.record(candidates, np.array(measured), q)
        self.active = np.array(active, dtype=int)
        self.active_distances = np.array(bounds, dtype=float)
        if not rows:
            return mink.limits.Constraint()
        return mink.limits.Constraint(G=np.array(rows), h=self.bound(self.active_distances))
