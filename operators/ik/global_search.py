"""Global fallback for targets the local IK cannot reach from where it is.

The tick's QP is local: from a folded arm, a far target can pull it against
its own links or the body and leave it there. When an arm's target is far (or
its tracking stalls), a multi-start search solves the same IK for that arm from
several seeds — home, the other arm's posture mirrored, then postures that
put the grip near the target: nodes of the arm's roadmap of home's region
(operators/ik/arm_roadmap.py), so that a solution lies where the arm can go,
when the arm is in that region itself; once those are used up, or for an
arm outside it, random ones (the best of 200 uniform samples
each) — on a separate copy of the solver, a bounded number of QP
iterations per control tick (so the tick's cost stays bounded and the result
is deterministic, which exact replay needs). The search holds the other arm
where it is and has no collision rows (they trap a search in local minima);
a solution counts only if its arm's proxy pairs are clear by the minimum
distance, the barrier margin and 5 mm.

A solution's route is checked in joint space before it is used: straight from
where the arm is, then through home, then (``route_search_checks`` > 0) round
the obstacles by a bounded RRT-Connect search (operators/ik/route_planner.py);
a solution with none of them is used last.

When the target is still far, or tracking has stalled, and the search holds
configurations that reach the target, the one nearest in joint space becomes
the arm's goal: the
tick's QP pulls the arm towards it (a posture term on that arm instead of its
grip task) under the same speed and acceleration caps, clearance rows and
guard, so the motion stays continuous — the goal is never jumped to. Within
``goal_reached_rad`` of it the arm tracks its grip target again; an arm that
stops getting closer to the goal drops it and takes the next solution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping

import mujoco
import numpy as np

from teledora.operators.config import config_from_mapping
from teledora.operators.errors import ConfigError
from teledora.operators.geometry import Pose, quat_angle, quat_to_matrix
from teledora.operators.ik.arm_chain_fk import ArmChainFk
from teledora.operators.ik.arm_roadmap import ArmRoadmap
from teledora.operators.ik.collision_pairs import CollisionPairs
from teledora.operators.ik.route_planner import RoutePlanner
from teledora.operators.model.sides import SIDES

if TYPE_CHECKING:  # the solver builds the search; no import cycle at run time
    from teledora.operators.ik.ik_solver import BimanualIk

# an arm posture mirrored across the sagittal plane: pan, wrist yaw and wrist roll change sign
MIRROR = np.array([-1.0, 1.0, 1.0, 1.0, -1.0, -1.0])
STILL_M, STILL_RAD = 0.005, 0.05  # a target that moves more than this is followed, not stalled on
SAMPLES_PER_SEED = 200  # uniform samples ranked for one random seed (one search iteration)
PATH_STEP_RAD = 0.1  # a route is checked at points this far apart (largest joint change)
PATH_SAMPLES_PER_ITERATION = 4  # route points checked per search iteration
ENTRY_NODES, ENTRY_RAD = 5, 1.5  # roadmap nodes (and how near) an arm's posture is tried against
ROUTE_STEP_RAD = 0.3  # largest joint change of one step of that search
LIBRARY_SPREAD_RAD = 0.3  # ranked seeds (library, roadmap) of one search differ by more than this on some joint


class GlobalSearchConfigError(ConfigError):
    """The ``global_search`` section of ik.yaml is missing a key or holds a bad value."""


@dataclass(frozen=True)
class GlobalSearchConfig:
    """The ``global_search`` section of ik.yaml (units in the names)."""

    enabled: bool
    far_position_m: float
    far_orientation_rad: float
    stall_ticks: int
    stall_min_position_m: float
    stall_min_orientation_rad: float
    iterations_per_tick: int
    max_iterations_per_seed: int
    random_seeds: int
    max_rounds: int
    library_size: int
    step_s: float
    position_tolerance_m: float
    orientation_tolerance_rad: float
    goal_reached_rad: float
    goal_change_m: float
    goal_change_rad: float
    rng_seed: int
    route_search_checks: int  # per solution with no straight or through-home route; 0: none
    roadmap_samples: int  # postures drawn for each arm's roadmap of home's region; 0: none

    def __post_init__(self) -> None:
        positive = ("far_position_m", "far_orientation_rad", "stall_ticks", "stall_min_position_m",
                    "stall_min_orientation_rad", "iterations_per_tick",
                    "max_iterations_per_seed", "max_rounds", "step_s", "position_tolerance_m",
                    "orientation_tolerance_rad", "goal_reached_rad", "goal_change_m", "goal_change_rad")
        for name in positive:
            if not getattr(self, name) > 0:
                raise GlobalSearchConfigError(f"{name} must be > 0")
        if self.random_seeds < 0:
            raise GlobalSearchConfigError("random_seeds must be >= 0")
        if self.route_search_checks < 0:
            raise GlobalSearchConfigError("route_search_checks must be >= 0")
        if self.library_size < 0:
            raise GlobalSearchConfigError("library_size must be >= 0")
        if self.roadmap_samples < 0:
            raise GlobalSearchConfigError("roadmap_samples must be >= 0")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "GlobalSearchConfig":
        """The ``global_search`` section, checked."""
        return config_from_mapping(cls, data, "global_search", GlobalSearchConfigError)


@dataclass
class _Search:
    """One arm's multi-start search for one goal."""

    goal: Pose
    seeds_done: int = 0
    library_seeds: "_RankedSeeds | None" = None  # library entries, best first
    roadmap_seeds: "_RankedSeeds | None" = None  # roadmap nodes, best first
    on_roadmap: bool | None = None  # the arm joins home's region by a straight clear segment (None: not known yet)
    entry: list[list[np.ndarray]] | None = None  # per nearby node, the segment's points still to check
    q: np.ndarray | None = None  # the search solver's 12 arm joints for the seed being solved
    rounds: int = 0  # passes over the random seeds
    iterations: int = 0
    best_error: float = np.inf
    since_best: int = 0
    active: bool = False  # a seed is being solved
    solutions: list[list[np.ndarray]] = field(default_factory=list)  # routes (joint waypoints) with clear paths
    unchecked: list[np.ndarray] = field(default_factory=list)  # solutions whose path is not checked yet
    path: list[np.ndarray] | None = None  # samples of the route being checked
    route: list[np.ndarray] | None = None  # the route being checked
    route_try: int = 0  # routes tried for the first unchecked solution
    planner: RoutePlanner | None = None  # the route search round obstacles, when neither simple route is clear
    blocked: list[list[np.ndarray]] = field(default_factory=list)  # solutions without a checked-clear route
    unrouted_first: bool = False  # solutions[0] came from ``blocked``
    exhausted: bool = False


@dataclass
class _RankedSeeds:
    """Postures ranked by grip pose error to a search's goal, handed out best
    first, each differing from those already taken by more than
    ``LIBRARY_SPREAD_RAD`` on some joint."""

    postures: np.ndarray
    order: np.ndarray
    next: int = 0
    chosen: list[np.ndarray] = field(default_factory=list)

    def take(self) -> np.ndarray | None:
        """The next posture far enough from those taken (None: none left)."""
        while self.next < len(self.order):
            q = self.postures[self.order[self.next]]
            self.next += 1
            if all(np.max(np.abs(q - c)) > LIBRARY_SPREAD_RAD for c in self.chosen):
                self.chosen.append(q)
                return q
        return None


@dataclass
class _Arm:
    """One arm's fallback state."""

    search: _Search | None = None
    best_score: float = np.inf
    since_best: int = 0
    goal_q: np.ndarray | None = None  # joint goal being moved to
    route: list[np.ndarray] = field(default_factory=list)  # waypoints after goal_q
    goal_best: float = np.inf
    goal_since_best: int = 0
    still_goal: Pose | None = None  # the target since it last moved
    route_checked: bool = True  # the goal's route was checked clear (False: engaged without one, last)


def _quat_matrix(q_xyzw: np.ndarray) -> np.ndarray:
    return np.asarray(quat_to_matrix(q_xyzw), dtype=float)


def _goal_delta(a: Pose, b: Pose) -> tuple[float, float]:
    """Position and rotation (rad) between two targets (unit quaternions)."""
    dot = min(1.0, abs(float(a.orientation @ b.orientation)))
    dx, dy, dz = a.position - b.position
    return math.sqrt(dx * dx + dy * dy + dz * dz), 2.0 * math.acos(dot)


def _pose_error(pose: Pose, goal: Pose) -> tuple[float, float]:
    return float(np.linalg.norm(pose.position - goal.position)), float(quat_angle(pose.orientation, goal.orientation))


_LIBRARIES: dict[tuple, "SeedLibrary"] = {}  # built once per model, arm and settings


def own_pair_indices(ik: "BimanualIk", side: str) -> np.ndarray:
    """Indices (into the IK's pairs) of the pairs only this arm's joints move:
    its own links against each other, its mount, the carriage and the column;
    not the other arm, and nothing the lift moves."""
    pairs = ik.collision_pairs
    other = "right" if side == "left" else "left"
    mine = set(pairs.moved_by(ik.profile.arms[side].joints).tolist())
    mine -= set(pairs.moved_by(ik.profile.arms[other].joints).tolist())
    mine -= set(pairs.moved_by([ik.profile.lift_joint]).tolist())
    return np.array(sorted(mine), dtype=int)


class SeedLibrary:
    """Collision-free configurations of one arm with their grip poses, drawn once.

    Uniform joint samples (seeded) are kept when the arm's pairs that neither
    the other arm nor the lift move (its own links, its mount, the carriage and
    column) are at least ``clearance`` apart; grip poses are stored at lift
    joint 0 (the lift only shifts them up or down). A search ranks them by grip
    pose error to its goal and takes the best as seeds: far closer starts than
    a few hundred fresh uniform samples give.
    """

    def __init__(self, ik: "BimanualIk", side: str, size: int, clearance: float, rng_seed: int) -> None:
        model = ik.model
        pairs = ik.collision_pairs
        index = ik.joint_index(ik.profile.arms[side].joints)
        lower, upper = ik.reference.lower_inner[index], ik.reference.upper_inner[index]
        among = own_pair_indices(ik, side) if pairs is not None else None
        data = mujoco.MjData(model)
        data.qpos[:] = ik.configuration.q
        data.qpos[ik._lift_adr] = 0.0
        home = np.array([ik.profile.home_q()[n] for n in ik.arm_joint_names])
        data.qpos[ik._qadr] = home
        adr = ik._qadr[index]
        site = model.site(ik.profile.arms[side].grip_site).id
        rng = np.random.default_rng([rng_seed, 0 if side == "left" else 1])
        q, pos, rot = [], [], []
        for _ in range(size):
            sample = rng.uniform(lower, upper)
            data.qpos[adr] = sample
            mujoco.mj_kinematics(model, data)
            if among is not None and among.size and pairs.min_distance(data, clearance + 1e-3, among=among) < clearance:
                continue
            q.append(sample)
            pos.append(data.site_xpos[site].copy())
            rot.append(data.site_xmat[site].copy())
        self.q = np.array(q).reshape(-1, len(index))
        self.pos = np.array(pos).reshape(-1, 3)
        self.rot = np.array(rot).reshape(-1, 9)

    @classmethod
    def shared(cls, ik: "BimanualIk", side: str, size: int, clearance: float, rng_seed: int) -> "SeedLibrary":
        """The library for this model, arm and settings (built on first use; the
        model object is kept in the key, so its id is not reused)."""
        key = (id(ik.model), ik.model, side, size, round(clearance, 9), rng_seed)
        if key not in _LIBRARIES:
            _LIBRARIES[key] = cls(ik, side, size, clearance, rng_seed)
        return _LIBRARIES[key]

    def __len__(self) -> int:
        return len(self.q)

    def rank(self, goal: Pose, lift_joint: float) -> np.ndarray:
        """Entry indices, best first, by grip position error + 0.1 m per rad of
        grip rotation error to ``goal`` at this lift."""
        target = goal.position - np.array([0.0, 0.0, lift_joint])
        pos = np.linalg.norm(self.pos - target, axis=1)
        cos = (self.rot @ quat_to_matrix(goal.orientation).reshape(9) - 1.0) / 2.0
        return np.argsort(pos + 0.1 * np.arccos(np.clip(cos, -1.0, 1.0)), kind="stable")


class GlobalFallback:
    """Multi-start search and joint-space goals for arms the local IK cannot bring
    to their targets.

    Args:
        ik: The tick's solver (read: its configuration and joint layout).
        search: A second solver on the same model whose control period is the
            search step (``step_s``) and which has no fallback of its own.
        config: The ``global_search`` settings.
    """

    def __init__(self, ik: "BimanualIk", search: "BimanualIk", config: GlobalSearchConfig) -> None:
        self.ik = ik
        self.solver = search
        self.config = config
        self.rng = np.random.default_rng(config.rng_seed)
        self.arms = {s: _Arm() for s in SIDES}
        self.index = {s: ik.joint_index(ik.profile.arms[s].joints) for s in SIDES}
        self.home = np.array([ik.profile.home_q()[n] for n in ik.arm_joint_names])
        self.lower, self.upper = ik.reference.lower_inner, ik.reference.upper_inner
        c = ik.settings.collision
        self.seed_clearance = (c.minimum_distance_m + c.barrier_margin_m + 0.005) if c.enabled else -np.inf
        self.path_clearance = (c.minimum_distance_m + c.barrier_margin_m) if c.enabled else -np.inf
        # a solution is checked on the pairs its own arm moves (the other arm may be pressed against something)
        self.pairs = ik.collision_pairs
        self.arm_pairs = ({s: self.pairs.moved_by(ik.profile.arms[s].joints) for s in SIDES}
                          if self.pairs is not None else {})
        # route checks: each arm's pairs alone (a smaller broadphase) on kinematics only
        self._route_pairs = ({s: CollisionPairs(ik.model, [self.pairs.id_pairs[k] for k in self.arm_pairs[s]])
                              for s in SIDES} if self.pairs is not None else {})
        self._route_data = mujoco.MjData(ik.model)
        self._fk_data = mujoco.MjData(ik.model)
        self._grip_site = {s: ik.model.site(ik.profile.arms[s].grip_site).id for s in SIDES}
        self._chain_fk = {s: ArmChainFk(ik.model, ik.profile.arms[s].joints, ik.profile.arms[s].grip_site)
                          for s in SIDES}
        self._quat, self._goal_r = np.zeros(4), np.zeros(9)
        self.library: dict[str, SeedLibrary] = {}
        if config.library_size > 0:
            self.library = {s: SeedLibrary.shared(ik, s, config.library_size, self.seed_clearance
                                                  if np.isfinite(self.seed_clearance) else 0.0, config.rng_seed)
                            for s in SIDES}
        self.roadmap: dict[str, ArmRoadmap] = {}
        if config.roadmap_samples > 0 and self.pairs is not None:
            self.roadmap = {s: ArmRoadmap.shared(ik, s, config.roadmap_samples, self.path_clearance, config.rng_seed)
                            for s in SIDES}
        self.searches_started = 0
        self.searches_off_roadmap = 0  # searches whose arm joined no roadmap node (random seeds)
        self.goals_engaged = 0
        self.iterations = 0
        self.routes_planned = 0
        self.home_routes_planned = 0
        self._turn = 0

    def clear(self, side: str | None = None) -> None:
        """Forgets every search and goal (the reference was restarted), or one arm's."""
        for s in SIDES if side is None else (side,):
            self.arms[s] = _Arm()

    # -- per tick --------------------------------------------------------------

    def plan(self, goals: Mapping[str, Pose | None]) -> dict[str, np.ndarray]:
        """Before a tick: the joint goals of arms in goal mode (side -> 6 joints)."""
        out = {}
        for side in SIDES:
            goal, arm = goals.get(side), self.arms[side]
            if goal is None:
                self.arms[side] = _Arm()
                continue
            if arm.search is not None and self._goal_changed(arm.search.goal, goal):
                self.arms[side] = arm = _Arm()
            pos, ori = self._grip_error(side, goal)
            if pos <= self.config.position_tolerance_m * 2 and ori <= self.config.orientation_tolerance_rad * 2:
                arm.goal_q, arm.search = None, None  # there: nothing to search for
                continue
            if arm.goal_q is None:
                score = pos + 0.1 * ori
                moved = arm.still_goal is None or any(
                    a > b for a, b in zip(_goal_delta(arm.still_goal, goal), (STILL_M, STILL_RAD)))
                if moved:
                    # a moving target is being followed, not stalled on
                    arm.still_goal, arm.best_score, arm.since_best = goal, score, 0
                elif score < arm.best_score - max(0.01 * arm.best_score, 5e-4):
                    arm.best_score, arm.since_best = score, 0
                else:
                    arm.since_best += 1
                stalled = arm.since_best >= self.config.stall_ticks and (
                    pos > self.config.stall_min_position_m or ori > self.config.stall_min_orientation_rad)
                far = pos > self.config.far_position_m or ori > self.config.far_orientation_rad
                if arm.search is None and (far or stalled):
                    arm.search = _Search(goal)
                    self.searches_started += 1
                if arm.search is not None and not arm.search.solutions and arm.search.blocked and (
                        arm.search.exhausted or (not arm.search.unchecked and arm.search.path is None
                                                 and arm.search.planner is None
                                                 and not arm.search.active and stalled)):
                    arm.search.solutions.append(arm.search.blocked.pop(0))
                    arm.search.unrouted_first = True
                if (stalled or far) and arm.search is not None and arm.search.solutions:
                    route = arm.search.solutions.pop(0)
                    arm.route_checked, arm.search.unrouted_first = not arm.search.unrouted_first, False
                    arm.goal_q, arm.route = route[0], list(route[1:])
                    arm.goal_best, arm.goal_since_best = np.inf, 0
                    self.goals_engaged += 1
            if arm.goal_q is not None:
                out[side] = arm.goal_q
        return out

    def _grip_error(self, side: str, goal: Pose) -> tuple[float, float]:
        """The tick solver's grip against ``goal``: position (m) and rotation (rad),
        read straight from the kinematics (no quaternion round trip)."""
        data, site = self.ik.configuration.data, self._grip_site[side]
        x, y, z, w = goal.orientation
        self._quat[:] = (w, x, y, z)
        mujoco.mju_quat2Mat(self._goal_r, self._quat)
        cos = (float(self._goal_r @ data.site_xmat[site]) - 1.0) / 2.0  # trace(R_goal^T R)
        dx, dy, dz = data.site_xpos[site] - goal.position
        return math.sqrt(dx * dx + dy * dy + dz * dz), math.acos(min(1.0, max(-1.0, cos)))

    def after_tick(self, arm_q: np.ndarray) -> dict[str, bool]:
        """After a committed tick: which arms reached their joint goal (they
        track their grip target again from the next tick)."""
        arrived = {}
        for side in SIDES:
            arm = self.arms[side]
            arrived[side] = False
            if arm.goal_q is None:
                continue
            gap = float(np.max(np.abs(arm_q[self.index[side]] - arm.goal_q)))
            if gap <= self.config.goal_reached_rad and arm.route:
                arm.goal_q = arm.route.pop(0)  # a waypoint: on to the next one
                arm.goal_best, arm.goal_since_best = np.inf, 0
            elif gap <= self.config.goal_reached_rad:
                arm.goal_q = None
                arm.still_goal, arm.since_best = None, 0
                arrived[side] = True
            elif gap < arm.goal_best - 1e-3:
                arm.goal_best, arm.goal_since_best = gap, 0
            else:
                arm.goal_since_best += 1
                if arm.goal_since_best >= self.config.stall_ticks:
                    arm.goal_q = None  # blocked on the way: the next solution, or more search
                    arm.since_best = self.config.stall_ticks  # still stalled
        return arrived

    def search_step(self) -> None:
        """Spends this tick's search budget on the arms that are searching."""
        budget = self.config.iterations_per_tick
        searching = [s for s in SIDES if self._wants_search(s)]
        while budget > 0 and searching:
            side = searching[self._turn % len(searching)]
            self._turn += 1
            self._iterate(side)
            budget -= 1
            searching = [s for s in SIDES if self._wants_search(s)]

    def _wants_search(self, side: str) -> bool:
        arm = self.arms[side]
        return arm.search is not None and not arm.search.exhausted and arm.goal_q is None and (
            not arm.search.solutions or arm.search.active or arm.search.path is not None
            or arm.search.planner is not None)

    def _goal_changed(self, old: Pose, new: Pose) -> bool:
        pos, ori = _goal_delta(old, new)
        return pos > self.config.goal_change_m or ori > self.config.goal_change_rad

    # -- the search ------------------------------------------------------------

    def _iterate(self, side: str) -> None:
        search = self.arms[side].search
        assert search is not None
        if search.path is not None or search.planner is not None or (search.unchecked and not search.active):
            self._check_route(side, search)
            return
        if not search.active and side in self.roadmap and search.on_roadmap is None and search.seeds_done >= 2:
            self._check_entry(side, search)  # before the first roadmap seed; home and the mirror go first
            return
        if not search.active:
            seed = self._next_seed(side, search)
            if seed is None:
                # every seed tried: start over with fresh random seeds (the
                # random stream moves on), until the goal changes
                search.seeds_done, search.rounds = 2, search.rounds + 1
                search.exhausted = search.rounds >= self.config.max_rounds
                return
            search.q = self.ik.arm_q()
            search.q[self.index[side]] = seed
            search.active, search.iterations, search.best_error, search.since_best = True, 0, np.inf, 0
        # both arms' searches share the solver: put this one's state back
        self.solver.reset(search.q, lift_joint=self._lift())
        targets = {s: (search.goal if s == side else None) for s in SIDES}
        try:
            self.solver.settle_step(targets)
        except Exception:  # a failed QP ends this seed
            search.active = False
            return
        self.iterations += 1
        search.iterations += 1
        search.q = self.solver.arm_q()
        pos, ori = _pose_error(self.solver.grip_pose(side), search.goal)
        if pos <= self.config.position_tolerance_m and ori <= self.config.orientation_tolerance_rad:
            if self._clear(side):
                search.unchecked.append(self.solver.arm_q()[self.index[side]].copy())
            search.active = False
            return
        error = pos + 0.1 * ori
        if error < search.best_error * 0.98:
            search.best_error, search.since_best = error, 0
        else:
            search.since_best += 1
        # a seed that stops improving is dropped, unless it is already close
        close = pos <= 5 * self.config.position_tolerance_m and ori <= 5 * self.config.orientation_tolerance_rad
        if search.iterations >= self.config.max_iterations_per_seed or (search.since_best >= 8 and not close):
            search.active = False

    def _route_samples(self, start: np.ndarray, route: list[np.ndarray]) -> list[np.ndarray]:
        """Points along the joint-space segments start -> route[0] -> ..., at most
        ``PATH_STEP_RAD`` apart on every joint."""
        out, a = [], start
        for b in route:
            n = max(1, int(np.ceil(float(np.max(np.abs(b - a))) / PATH_STEP_RAD)))
            out += [a + (b - a) * (k / n) for k in range(1, n + 1)]
            a = b
        return out

    def _check_route(self, side: str, search: _Search) -> None:
        """Checks ``PATH_SAMPLES_PER_ITERATION`` points of a solution's route for
        clearance: straight from where the arm is, then through home, then
        (``route_search_checks`` > 0) a route searched round the obstacles; a
        solution none of these clears is kept last, for when nothing better is
        found."""
        idx = self.index[side]
        if search.planner is not None:
            if search.planner.advance(PATH_SAMPLES_PER_ITERATION):
                route, search.planner = search.planner.route, None
                self._route_done(search, route)
            return
        if search.path is None:
            goal = search.unchecked[0]
            candidates = [[goal], [self.home[idx], goal]]
            search.route_try += 1
            if search.route_try <= len(candidates):
                search.route = candidates[search.route_try - 1]
                search.path = self._route_samples(self.ik.arm_q()[idx], search.route)
            elif self.config.route_search_checks > 0 and search.route_try == len(candidates) + 1:
                self.routes_planned += 1  # each route search has its own random stream, the seeds' is left alone
                search.planner = RoutePlanner(
                    self.ik.arm_q()[idx], goal, self.lower[idx], self.upper[idx],
                    lambda q: self._arm_clear(side, q), np.random.default_rng([self.config.rng_seed, self.routes_planned]),
                    step_rad=ROUTE_STEP_RAD,
                    resolution_rad=PATH_STEP_RAD, max_checks=self.config.route_search_checks)
                return
            else:
                # no route is clear at every checked point: kept last, the
                # QP's clearance rows may still find a way round
                self._route_done(search, None)
                return
        for _ in range(PATH_SAMPLES_PER_ITERATION):
            if not search.path:
                self._route_done(search, search.route)
                return
            if not self._arm_clear(side, search.path.pop(0)):
                search.path = None  # blocked: the next call tries the next route
                return

    @staticmethod
    def _route_done(search: _Search, route: list[np.ndarray] | None) -> None:
        """The first unchecked solution leaves the queue: with its clear route,
        or (None) among the blocked ones."""
        goal = search.unchecked.pop(0)
        if route is not None:
            search.solutions.append(route)
        else:
            search.blocked.append([goal])
        search.path, search.route, search.route_try = None, None, 0

    def _arm_clear(self, side: str, arm_joints: np.ndarray) -> bool:
        """Whether this arm at ``arm_joints`` (the other arm and the lift where
        the tick solver has them) keeps its pairs a route's clearance apart."""
        if self.pairs is None:
            return True
        data = self._route_data
        data.qpos[:] = self.ik.configuration.q
        data.qpos[self.ik._qadr[self.index[side]]] = arm_joints
        mujoco.mj_kinematics(self.ik.model, data)
        clearance = self.path_clearance
        return self._route_pairs[side].min_distance(data, clearance + 1e-3) >= clearance

    def home_route_planner(self, side: str, start: np.ndarray, max_checks: int) -> RoutePlanner:
        """A route search for this arm from ``start`` to its home joints,
        checked as a solution's route is (straight first, then round the
        obstacles); each search has its own random stream, so a replay plans
        the same route."""
        idx = self.index[side]
        self.home_routes_planned += 1
        return RoutePlanner(start, self.home[idx], self.lower[idx], self.upper[idx],
                            lambda q: self._arm_clear(side, q),
                            np.random.default_rng([self.config.rng_seed, 2, self.home_routes_planned]),
                            step_rad=ROUTE_STEP_RAD, resolution_rad=PATH_STEP_RAD, max_checks=max_checks)

    def _lift(self) -> float:
        return float(self.ik.configuration.q[self.ik._lift_adr])

    def _next_seed(self, side: str, search: _Search) -> np.ndarray | None:
        """The next seed: home, the other arm mirrored, then roadmap nodes
        (when the arm has a roadmap) or library entries or random ones; None
        when every seed of this pass has been tried."""
        idx = self.index[side]
        while search.seeds_done < 2 + self.config.random_seeds:
            k = search.seeds_done
            if k == 0:
                seed = self.home[idx]
            elif k == 1:
                other = "right" if side == "left" else "left"
                seed = self.ik.arm_q()[self.index[other]] * MIRROR
            elif search.on_roadmap and (seed := self._roadmap_seed(side, search)) is not None:
                pass  # the roadmap's nodes first; fresh random ones once its spread-out nodes are used up
            elif self.library:
                seed = self._library_seed(side, search)
                if seed is None:
                    search.seeds_done = 2 + self.config.random_seeds
                    break  # the library has nothing more for this goal
            else:
                seed = self._random_seed(side, search)
            search.seeds_done += 1
            return np.clip(seed, self.lower[idx], self.upper[idx])
        return None

    def _clear(self, side: str, clearance: float | None = None) -> bool:
        """Whether the search solver's configuration keeps this arm's pairs
        ``clearance`` apart (default: a solution's; the search itself has no
        collision rows)."""
        if self.pairs is None:
            return True
        clearance = self.seed_clearance if clearance is None else clearance
        d = self.pairs.min_distance(self.solver.configuration.data, clearance + 1e-3, among=self.arm_pairs[side])
        return d >= clearance

    def _library_seed(self, side: str, search: _Search) -> np.ndarray | None:
        """The next library entry by grip pose error to the goal that differs
        from the seeds already taken by more than ``LIBRARY_SPREAD_RAD`` on some
        joint (None: none left)."""
        if search.library_seeds is None:
            library = self.library[side]
            search.library_seeds = _RankedSeeds(library.q, library.rank(search.goal, self._lift()))
        return search.library_seeds.take()

    def _check_entry(self, side: str, search: _Search) -> None:
        """Whether the arm, where it is, lies in home's region: a straight
        segment to one of its nearest roadmap nodes (within ``ENTRY_RAD``) is
        clear at the roadmap's spacing. Checks ``PATH_SAMPLES_PER_ITERATION``
        points a call; an arm that joins none (one powered on in another
        piece of its free space) searches with random seeds, whose solutions
        can lie in its own piece."""
        roadmap = self.roadmap[side]
        if search.entry is None:
            q = self.ik.arm_q()[self.index[side]]
            gap = np.max(np.abs(roadmap.nodes - q), axis=1)
            near = [int(j) for j in np.argsort(gap, kind="stable")[:ENTRY_NODES] if gap[j] <= ENTRY_RAD]
            search.entry = [self._route_samples(q, [roadmap.nodes[j]]) for j in near]
        for _ in range(PATH_SAMPLES_PER_ITERATION):
            if not search.entry:
                search.on_roadmap = False
                self.searches_off_roadmap += 1
                return
            points = search.entry[0]
            if not points:
                search.on_roadmap = True
                return
            if roadmap.clear(points.pop(0)):
                continue
            search.entry.pop(0)  # blocked: the next node

    def _roadmap_seed(self, side: str, search: _Search) -> np.ndarray | None:
        """The next roadmap node by grip pose error to the goal (at this lift)
        that differs from the nodes already taken (None: none left)."""
        if search.roadmap_seeds is None:
            roadmap = self.roadmap[side]
            search.roadmap_seeds = _RankedSeeds(roadmap.nodes, roadmap.rank(search.goal, self._lift()))
        return search.roadmap_seeds.take()

    def _random_seed(self, side: str, search: _Search) -> np.ndarray:
        """The best of ``SAMPLES_PER_SEED`` uniform joint samples by how close
        they put the grip to the goal (position plus 0.1 m per rad), their grip
        poses computed together (forward kinematics of the arm's chain only)."""
        idx = self.index[side]
        data = self._fk_data
        data.qpos[:] = self.ik.configuration.q
        mujoco.mj_kinematics(self.ik.model, data)  # the body the arm hangs from, at this lift
        samples = self.rng.uniform(self.lower[idx], self.upper[idx], size=(SAMPLES_PER_SEED, len(idx)))
        pos, rot = self._chain_fk[side].poses(data, samples)
        dist = np.linalg.norm(pos - search.goal.position, axis=1)
        cos = (np.einsum("ij,nij->n", _quat_matrix(search.goal.orientation), rot) - 1.0) / 2.0
        ori = np.arccos(np.clip(cos, -1.0, 1.0))
        return samples[int(np.argmin(dist + 0.1 * ori))]

    def details(self) -> dict[str, Any]:
        return {
            "searches": self.searches_started,
            "goals_engaged": self.goals_engaged,
            "searches_off_roadmap": self.searches_off_roadmap,
            "iterations": self.iterations,
            "goal_mode": {s: self.arms[s].goal_q is not None for s in SIDES},
        }
