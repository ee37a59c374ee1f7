"""How fast the lift may move without carrying an arm into the robot's body.

The IK keeps every arm pair apart while the arms move, but it does not move the
lift: the lift follows its own command. The lift carries the carriage and both
arms, so its motion can bring a wrist camera onto the camera mount or a jaw
onto the column whatever the IK does. This guard bounds the lift's speed from
the pairs the lift's motion changes: one geom carried by the lift, the other
not (MuJoCo's collision filter decides which pairs exist at all).

Per pair, at the current posture: its distance ``d`` and, from a probe step of
the lift up and down, whether the lift's motion brings it closer. Proxies are
convex and the lift translates the carried one, so a pair's distance along the
lift's travel is a convex function of it, moves at most as far as the lift
does, and stays at or above ``d`` in a direction in which it does not shrink at
first. In a direction that brings pairs closer the lift may travel at most
``d − clearance − probe − max_speed × latency_s`` of the closest such pair
within ``horizon_s`` (the time a command takes to reach the lift and the lift
to stop), so the speed cap in that direction is that travel over the horizon.
``latency_s`` covers the lift having moved on since the height the posture
holds was measured. Evaluated again every tick,
the lift slows as it nears something and stops ``clearance`` short of it.

Pure: MuJoCo's model and its own scratch data, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np

from teledora.operators.ik.collision_pairs import CollisionPairs, filter_allowed_pairs


@dataclass(frozen=True)
class LiftSpeedBounds:
    """The lift speeds allowed now (m/s, ``down`` ≤ 0 ≤ ``up``) and the pair
    that sets the tighter one (empty when nothing is near)."""

    down: float
    up: float
    nearest: str = ""
    distance_m: float = float("inf")


def _carried_bodies(model: mujoco.MjModel, lift_body: int) -> set[int]:
    carried = set()
    for body in range(model.nbody):
        b = body
        while b > 0 and b != lift_body:
            b = int(model.body_parentid[b])
        if b == lift_body:
            carried.add(body)
    return carried


class LiftGuard:
    """Speed bounds for the lift at a posture (see the module's notes).

    Args:
        model: The IK's MuJoCo model (robot proxies and floor).
        lift_joint: The lift's slide joint.
        clearance_m: The distance every carried/not-carried pair keeps.
        horizon_s: How long the lift may run on one decision.
        latency_s: The most a measured lift height may lag the lift.
        probe_m: The probe step that tells which pairs the lift's motion closes.
    """

    def __init__(self, model: mujoco.MjModel, lift_joint: str, clearance_m: float, horizon_s: float,
                 latency_s: float = 0.0, probe_m: float = 1e-4) -> None:
        if not (clearance_m >= 0 and horizon_s > 0 and latency_s >= 0 and probe_m > 0):
            raise ValueError("clearance_m and latency_s must be >= 0, horizon_s and probe_m > 0")
        self.latency_s = float(latency_s)
        jid = model.joint(lift_joint).id
        self.model = model
        self.adr = int(model.jnt_qposadr[jid])
        carried = _carried_bodies(model, int(model.jnt_bodyid[jid]))
        crossing = [(a, b) for a, b in filter_allowed_pairs(model)
                    if (model.geom_bodyid[a] in carried) != (model.geom_bodyid[b] in carried)]
        self.pairs = CollisionPairs(model, crossing)
        self.clearance_m, self.horizon_s, self.probe_m = float(clearance_m), float(horizon_s), float(probe_m)
        self._data = mujoco.MjData(model)

    def _distances(self, qpos: np.ndarray, distmax: float, among: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Distances (capped at ``distmax``) of the pairs ``among`` (default:
        those the broadphase finds near at ``qpos``), and those pairs."""
        self._data.qpos[:] = qpos
        mujoco.mj_kinematics(self.model, self._data)
        if among is None:
            among = self.pairs.near(self._data, distmax + 2 * self.probe_m)
        return self.pairs.distances_of(self._data, among, distmax), among

    def bounds(self, qpos: np.ndarray, max_speed_m_s: float) -> LiftSpeedBounds:
        """The lift speeds allowed at ``qpos`` (the model's full joint vector,
        the lift at its measured height), each no faster than ``max_speed_m_s``."""
        reach = max_speed_m_s * self.horizon_s
        distmax = self.clearance_m + self.probe_m + reach + 0.01  # farther pairs cannot matter this decision
        q = np.array(qpos, dtype=float)
        d0, near = self._distances(q, distmax)
        q[self.adr] += self.probe_m
        d_up, _ = self._distances(q, distmax, near)
        q[self.adr] -= 2 * self.probe_m
        d_down, _ = self._distances(q, distmax, near)
        # the probe's own step (and any dip within it) and the lift's motion since its height was measured kept out
        room = d0 - self.clearance_m - self.probe_m - max_speed_m_s * self.latency_s
        speeds, nearest, nearest_d = [], "", float("inf")
        for d_dir in (d_down, d_up):
            closing = np.flatnonzero(d_dir < d0)
            travel = reach if closing.size == 0 else float(np.clip(room[closing].min(), 0.0, reach))
            speeds.append(travel / self.horizon_s)
            if closing.size:
                k = int(closing[np.argmin(room[closing])])
                if d0[k] < nearest_d:
                    g1, g2 = self.pairs.id_pairs[int(near[k])]
                    nearest, nearest_d = f"{self.pairs.name(g1)} / {self.pairs.name(g2)}", float(d0[k])
        return LiftSpeedBounds(-min(speeds[0], max_speed_m_s), min(speeds[1], max_speed_m_s), nearest, nearest_d)
