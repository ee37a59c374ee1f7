"""One arm's postures reachable from home, joined by checked routes.

The global fallback's random seeds can converge on a solution in a piece of
the arm's free joint space that home (and so the arm) cannot reach without
passing through the robot; no route search then finds a way there. An
``ArmRoadmap`` is a sampled roadmap (operators/ik/free_space_roadmap.py) of
the arm's joints, checked on the pairs only that arm moves (its own links,
its mount, the carriage and the column: true whatever the other arm and the
lift do), cut down to the piece that holds home. Its nodes are seeds whose
solutions lie where the arm can go, and its tree joins any two of them by
segments that were checked clear of those pairs (the fallback still checks a
route against the other arm before using it).

Built once per process for a model, arm and settings; deterministic.
"""

from __future__ import annotations

import hashlib
from collections import deque
from typing import TYPE_CHECKING, Callable

import mujoco
import numpy as np

from teledora.operators.geometry import Pose, quat_to_matrix
from teledora.operators.ik.arm_chain_fk import ArmChainFk
from teledora.operators.ik.collision_pairs import CollisionPairs
from teledora.operators.ik.free_space_roadmap import FreeSpaceRoadmap

if TYPE_CHECKING:
    from teledora.operators.ik.ik_solver import BimanualIk

_ROADMAPS: dict[tuple, "ArmRoadmap"] = {}  # built once per model, arm and settings


def own_space_check(ik: "BimanualIk", side: str, among: np.ndarray, clearance: float) -> Callable[[np.ndarray], bool]:
    """Whether the arm's six joints keep the pairs ``among`` (indices into the
    IK's pairs: those only this arm moves) ``clearance`` apart."""
    pairs = CollisionPairs(ik.model, [ik.collision_pairs.id_pairs[k] for k in among])
    data = mujoco.MjData(ik.model)
    data.qpos[:] = ik.configuration.q
    adr = ik._qadr[ik.joint_index(ik.profile.arms[side].joints)]

    def clear(q: np.ndarray) -> bool:
        data.qpos[adr] = q
        mujoco.mj_kinematics(ik.model, data)
        return pairs.min_distance(data, clearance + 1e-3) >= clearance

    return clear


class ArmRoadmap:
    """Home's piece of one arm's free joint space, as a tree of checked segments.

    Args:
        lower, upper: The arm's joint box.
        home: The arm's home joints (the tree's root, node 0).
        clear: The clearance check of one arm posture.
        samples: Clear postures drawn for the whole roadmap (home's piece keeps about half).
        rng_seed: Seeds the draw (with the arm's index, so the arms differ).
        arm_index: 0 for the left arm, 1 for the right.
        grip_poses: The grip's positions (N, 3) and rotation matrices (N, 3, 3)
            at lift joint 0 for postures (N, 6), stored per node for ranking.
    """

    def __init__(self, lower: np.ndarray, upper: np.ndarray, home: np.ndarray, clear: Callable[[np.ndarray], bool],
                 samples: int, rng_seed: int, arm_index: int,
                 grip_poses: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]) -> None:
        self.clear = clear
        roadmap = FreeSpaceRoadmap(lower, upper, clear, np.random.default_rng([rng_seed, 7, arm_index]),
                                   samples=samples, anchors=[np.asarray(home, dtype=float)])
        regions = roadmap.node_regions()
        keep = np.flatnonzero(regions == regions[0])  # home is node 0 of both
        renumber = {int(old): new for new, old in enumerate(keep)}
        self.nodes = roadmap.nodes[keep]
        # parents on the tree rooted at home (the roadmap keeps a spanning tree per piece)
        self.parent = np.full(len(keep), -1, dtype=int)
        self.depth = np.zeros(len(keep), dtype=int)
        seen, todo = {0}, deque([0])
        while todo:
            i = todo.popleft()
            for old in roadmap._edges[int(keep[i])]:
                j = renumber[old]
                if j not in seen:
                    seen.add(j)
                    self.parent[j], self.depth[j] = i, self.depth[i] + 1
                    todo.append(j)
        pos, rot = grip_poses(self.nodes)
        self.grip_pos, self.grip_rot = np.asarray(pos), np.asarray(rot).reshape(-1, 9)

    @classmethod
    def shared(cls, ik: "BimanualIk", side: str, samples: int, clearance: float, rng_seed: int) -> "ArmRoadmap":
        """The roadmap for this model, arm and settings (built on first use)."""
        from teledora.operators.ik.global_search import own_pair_indices  # the fallback imports this module

        index = ik.joint_index(ik.profile.arms[side].joints)
        home = np.array([ik.profile.home_q()[n] for n in ik.arm_joint_names])[index]
        lower, upper = ik.reference.lower_inner[index], ik.reference.upper_inner[index]
        among = own_pair_indices(ik, side)
        # keyed by what the roadmap depends on, not by the model object: every
        # solver built on the same robot (tests build many) shares one
        digest = hashlib.sha256()
        m = ik.model
        for array in (m.body_pos, m.body_quat, m.body_parentid, m.jnt_pos, m.jnt_axis, m.geom_type, m.geom_size,
                      m.geom_pos, m.geom_quat, m.geom_bodyid, np.asarray(ik.collision_pairs.id_pairs)[among],
                      ik._qadr[index], home, lower, upper):
            digest.update(np.ascontiguousarray(array).tobytes())
        key = (digest.hexdigest(), side, samples, round(clearance, 9), rng_seed)
        if key not in _ROADMAPS:
            check = own_space_check(ik, side, among, clearance)
            data = mujoco.MjData(m)
            data.qpos[:] = ik.configuration.q
            data.qpos[ik._lift_adr] = 0.0
            mujoco.mj_kinematics(m, data)
            fk = ArmChainFk(m, ik.profile.arms[side].joints, ik.profile.arms[side].grip_site)
            _ROADMAPS[key] = cls(lower, upper, home, check, samples, rng_seed, 0 if side == "left" else 1,
                                 lambda q: fk.poses(data, q))
        return _ROADMAPS[key]

    def __len__(self) -> int:
        return len(self.nodes)

    def rank(self, goal: Pose, lift_joint: float) -> np.ndarray:
        """Node indices, best first, by grip position error + 0.1 m per rad of
        grip rotation error to ``goal`` with the lift at ``lift_joint`` (the
        lift only shifts the grip up)."""
        target = goal.position - np.array([0.0, 0.0, lift_joint])
        pos = np.linalg.norm(self.grip_pos - target, axis=1)
        cos = (self.grip_rot @ np.asarray(quat_to_matrix(goal.orientation), dtype=float).reshape(9) - 1.0) / 2.0
        return np.argsort(pos + 0.1 * np.arccos(np.clip(cos, -1.0, 1.0)), kind="stable")

    def path(self, a: int, b: int) -> list[np.ndarray]:
        """The tree's nodes from node ``a`` to node ``b`` (both included)."""
        up, down = [a], [b]
        while up[-1] != down[-1]:
            if self.depth[up[-1]] >= self.depth[down[-1]]:
                up.append(int(self.parent[up[-1]]))
            else:
                down.append(int(self.parent[down[-1]]))
        return [self.nodes[i].copy() for i in up + down[-2::-1]]
