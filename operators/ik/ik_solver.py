"""Bimanual differential IK: one mink QP for both arms, solved with DAQP.

One tick: frame tasks pull both grip sites towards their targets (position
cost 12, orientation cost 2, Levenberg–Marquardt damping 0.1), a posture task
pulls towards the home posture, a Tikhonov term regularises the Hessian. The
QP runs over the full model tangent space; base, lift and grippers (and any
held arm) are frozen with equality constraints. Inequalities: joint range
(configuration limit), arm speed caps, and clearance rows for every proxy pair
the model's collision filter allows (:class:`ClearanceLimit`: a pair may close
at most ``gain * (d - d_min)`` in one step — a distance on the displacement
QP, where mink's stock limit puts ``gain * (d - d_min) / dt``). The QP looks
ahead by one tick plus a braking distance, so its step is a *goal* the
reference can cruise towards at full speed and still stop at. The goal is
passed through an exact collision guard (shortened until every proxy pair
stays above ``guard_distance_m`` or stops closing) and the merit
backtracking, then handed to
the jerk-limited :class:`JointReference`, which moves towards it under the
speed, acceleration and jerk caps. The path of the new plans passes the same
guard every control period until it stops, or the arm brakes or keeps the plan
it had; where the reference is after the tick becomes the solver's own
reference configuration.

When an arm's target is far, or its tracking stalls, a global multi-start
search (:class:`GlobalFallback`) looks for joint configurations that reach
it; the one it picks becomes that arm's joint-space goal for the QP (a
posture term on that arm in place of its grip task), approached through the
same caps, rows, guard and reference — never jumped to.

The numbers come from ``models/alohamini2/ik.yaml``; nothing is hard-coded.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Mapping, Sequence

import daqp
import mink
import mujoco
import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError
from teledora.operators.ik.clearance_limit import ClearanceLimit
from teledora.operators.ik.collision_guard import CollisionGuard
from teledora.operators.ik.collision_pairs import CollisionPairs, joint_levers_m
from teledora.operators.ik.distance_bounds import DistanceBounds
from teledora.operators.ik.global_search import GlobalFallback
from teledora.operators.ik.ik_settings import IkConfigError, IkSettings
from teledora.operators.ik.ik_tasks import MeritFrameTask, MeritPostureTask, pose_to_se3
from teledora.operators.ik.joint_reference import SAFER, JointReference
from teledora.operators.geometry import Pose, matrix_to_quat
from teledora.operators.model.robot_profile import RobotProfile
from teledora.operators.model.sides import SIDES

GOAL_COST = 2.0  # posture cost (1/rad) pulling an arm to its global-search joint goal
# a plan's path near the guard distance is also checked at this many points per control period
PATH_SUBDIVISIONS = 10


class IkSolveError(TeledoraError, RuntimeError):
    """The QP found no solution (or a non-finite one); nothing was changed."""


@dataclass
class TickResult:
    """What one IK tick did."""

    status: str  # "ok", "hold" (no active arm) or "failed" (QP error; no new goal)
    q: np.ndarray  # arm joint reference after the tick (arm_joint_names order)
    dq: np.ndarray  # feedforward velocity (the reference's; zero once it has stopped)
    active: dict[str, bool] = field(default_factory=dict)
    step_fraction: float = 1.0  # < 1 when the collision guard shortened the step
    min_distance_m: float = float("inf")  # closest proxy pair the guard saw (capped just above the guard distance)
    error: str = ""
    goal_mode: dict[str, bool] = field(default_factory=dict)  # arms moving to a global-search joint goal
    arrived: dict[str, bool] = field(default_factory=dict)  # arms that reached it this tick


@dataclass(frozen=True)
class _ReducedQp:
    """The constant parts of the QP over the dofs a freezing pattern leaves
    free: which dofs, their range (qpos) and speed cap as simple bounds, and
    the frozen dofs' ranges."""

    free: np.ndarray  # dof indices
    free_qadr: np.ndarray
    lower: np.ndarray  # joint range of the free dofs (+-inf where unlimited)
    upper: np.ndarray
    gain: float
    speed: np.ndarray  # speed cap per free dof (1e30 where none)
    frozen_qadr: np.ndarray  # frozen dofs with a range row
    frozen_lower: np.ndarray
    frozen_upper: np.ndarray

    @classmethod
    def build(cls, model: mujoco.MjModel, frozen: set[int], range_limit: mink.ConfigurationLimit,
              speed_limit: mink.VelocityLimit) -> "_ReducedQp":
        scalar = (int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE))
        ranged = set(range_limit.indices.tolist())
        free = np.array([d for d in range(model.nv) if d not in frozen], dtype=int)
        for d in free:
            if int(model.jnt_type[model.dof_jntid[d]]) not in scalar:
                raise IkConfigError(f"dof {d} is neither frozen nor a hinge or slide joint")
        qadr = np.array([model.jnt_qposadr[model.dof_jntid[d]] for d in range(model.nv)], dtype=int)
        has_range = np.array([d in ranged for d in range(model.nv)])
        lower = np.where(has_range, range_limit.lower[np.minimum(qadr, model.nq - 1)], -np.inf)
        upper = np.where(has_range, range_limit.upper[np.minimum(qadr, model.nq - 1)], np.inf)
        speed = np.full(model.nv, 1e30)
        if speed_limit.projection_matrix is not None:
            speed[speed_limit.indices] = speed_limit.limit
        # a frozen dof's range rows only exist for scalar joints (a free joint has none)
        fz = np.array([d for d in sorted(frozen) if has_range[d]
                       and int(model.jnt_type[model.dof_jntid[d]]) in scalar], dtype=int)
        return cls(free, qadr[free], np.maximum(lower[free], -1e30), np.minimum(upper[free], 1e30),
                   float(range_limit.gain), speed[free], qadr[fz], lower[fz], upper[fz])


class BimanualIk:
    """Both arms' IK on one QP, integrating its own reference configuration.

    Args:
        model: MuJoCo model (use :func:`build_ik_model`).
        profile: Robot profile (joint names, grip sites, home posture).
        settings: Solver, collision, joint-reference and global-search settings.
        with_fallback: Build the global fallback when the settings enable it
            (False for the fallback's own search solver).
    """

    def __init__(self, model: mujoco.MjModel, profile: RobotProfile, settings: IkSettings,
                 with_fallback: bool = True) -> None:
        self.model = model
        self.profile = profile
        self.settings = settings
        s, c = settings.solver, settings.collision
        self.dt = s.control_period_s
        self.configuration = mink.Configuration(model)
        self.arm_joint_names: list[str] = [j for side in SIDES for j in profile.arms[side].joints]
        self._jid = {n: self._joint_id(n) for n in self.arm_joint_names}
        self._qadr = np.array([model.jnt_qposadr[self._jid[n]] for n in self.arm_joint_names])
        self._dofadr = {n: int(model.jnt_dofadr[self._jid[n]]) for n in self.arm_joint_names}
        self._side_dofs = {side: [self._dofadr[j] for j in profile.arms[side].joints] for side in SIDES}
        self._frozen_dofs = [int(model.jnt_dofadr[self._joint_id(n)]) for n in s.frozen_joints]
        self._lift_adr = int(model.jnt_qposadr[self._joint_id(profile.lift_joint)])
        # ranges read once: asked for on every solve and every lift state
        lift_lo, lift_hi = model.jnt_range[self._joint_id(profile.lift_joint)]
        self._lift_range = (lift_lo, lift_hi)
        self._gripper_ranges = {
            side: tuple(float(v) for v in model.jnt_range[self._joint_id(profile.arms[side].gripper)]) for side in SIDES
        }

        self.frame_tasks = {
            side: MeritFrameTask(
                profile.arms[side].grip_site, "site",
                position_cost=s.position_cost, orientation_cost=s.orientation_cost, lm_damping=s.lm_damping,
            )
            for side in SIDES
        }
        self.posture_task = MeritPostureTask(model, cost=s.posture_cost)
        q0 = self.configuration.q.copy()
        q0[self._lift_adr] = profile.lift_height_to_joint(profile.lift.travel_mm / 2000.0)
        for name, value in profile.home_q().items():
            if name in self._jid:
                q0[model.jnt_qposadr[self._jid[name]]] = value
        self.configuration.update(q0)
        self.posture_task.set_target(q0)

        self._range_limit = mink.ConfigurationLimit(model, gain=s.configuration_limit_gain)
        self._speed_limit = mink.VelocityLimit(model, {n: s.arm_max_speed_rad_s for n in self.arm_joint_names})
        self.limits: list[mink.Limit] = [self._range_limit, self._speed_limit]
        self._reduced_qps: dict[tuple[bool, bool], _ReducedQp] = {}
        self.collision_pairs: CollisionPairs | None = None
        if c.enabled:
            self.collision_pairs = CollisionPairs.from_model(model, self.arm_joint_names)
            # one set of distance bounds for the QP's rows and the guard: a pair either measured stays known to both
            bounds = DistanceBounds(self.collision_pairs, self.arm_joint_names)
            self.collision_limit = ClearanceLimit(self.collision_pairs, c.gain, c.minimum_distance_m,
                                                  c.detection_distance_m, c.barrier_margin_m, bounds)
            levers = joint_levers_m(model, self.collision_pairs.geoms, self.arm_joint_names)
            self.guard = CollisionGuard(self.collision_pairs, self.collision_limit, c.guard_distance_m, levers, bounds)
            self.limits.append(self.collision_limit)
        self._freezers: dict[tuple[bool, bool], mink.DofFreezingTask] = {}

        lower = np.array([model.jnt_range[self._jid[n]][0] for n in self.arm_joint_names])
        upper = np.array([model.jnt_range[self._jid[n]][1] for n in self.arm_joint_names])
        groups = [self.joint_index(profile.arms[side].joints) for side in SIDES]  # one generator per arm
        self._arm_index = dict(zip(SIDES, groups))
        self.reference = JointReference(self.arm_joint_names, lower, upper, settings.joint_reference, groups)
        self.reference.reset(self.arm_q())
        # The QP's step is the reference's goal, so it may reach one tick plus a
        # braking distance ahead: at full speed the braking distance is
        # max_speed * stopping_time / 2, i.e. max_speed * lookahead_s.
        self.lookahead_s = settings.joint_reference.stopping_time_s() / 2.0
        self.solves = 0
        self.failures = 0
        self.guard_shortened = 0
        self.guard_per_arm = 0  # shortened steps where each arm kept its own fraction
        self.backtracked = 0
        self.plans_refused = 0  # reference plans whose path failed the collision guard
        self.relaxed_solves = 0  # QPs solved again with approach-only clearance rows
        self._scratch = mujoco.MjData(model)  # kinematics for checking plan paths
        self.path_subdivisions = PATH_SUBDIVISIONS  # 1: a plan's path is checked every control period only
        # optional per-phase timing of tick(): a clock passed in by the caller (benchmarks)
        self.phase_clock: Callable[[], float] | None = None
        self.phase_times: dict[str, float] = {}

        # joint-space goal terms for arms the global fallback moves (cost on that arm only)
        self.goal_tasks: dict[str, MeritPostureTask] = {}
        for side in SIDES:
            cost = np.zeros(model.nv)
            cost[self._side_dofs[side]] = GOAL_COST
            self.goal_tasks[side] = MeritPostureTask(model, cost=cost)
        self.fallback: GlobalFallback | None = None
        g = settings.global_search
        if with_fallback and g is not None and g.enabled:
            # the search wants the target exactly: longer steps, no pull towards home,
            # no collision rows (a solution is checked for clearance once found)
            search_settings = replace(settings, solver=replace(s, control_period_s=g.step_s, posture_cost=0.0),
                                      collision=replace(c, enabled=False), global_search=None)
            self.fallback = GlobalFallback(self, BimanualIk(model, profile, search_settings, with_fallback=False), g)

    # -- model access ---------------------------------------------------------

    def _joint_id(self, name: str) -> int:
        jid = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            raise IkConfigError(f"joint {name!r} is not in the IK model")
        return int(jid)

    def arm_q(self) -> np.ndarray:
        """The 12 arm joint values of the reference configuration (arm_joint_names order)."""
        return self.configuration.q[self._qadr].copy()

    def _set_q(self, arm_q: np.ndarray) -> None:
        q = self.configuration.q.copy()
        q[self._qadr] = arm_q
        self.configuration.update(q)

    def reset(self, arm_q: Mapping[str, float] | npt.ArrayLike, lift_joint: float | None = None) -> None:
        """Re-initialises the reference (e.g. from the first valid joint state)."""
        if isinstance(arm_q, Mapping):
            values = np.array([float(arm_q[n]) for n in self.arm_joint_names])
        else:
            values = np.asarray(arm_q, dtype=float)
        if values.shape != (len(self.arm_joint_names),) or not np.all(np.isfinite(values)):
            raise IkConfigError(f"reset needs {len(self.arm_joint_names)} finite arm joint values")
        q = self.configuration.q.copy()
        if lift_joint is not None:
            q[self._lift_adr] = float(lift_joint)
        q[self._qadr] = self.reference.clamp(values)
        self.configuration.update(q)
        self.reference.reset(self.arm_q())
        if getattr(self, "fallback", None) is not None:
            self.fallback.clear()

    def resync_arm(self, side: str, joint_q: Mapping[str, float]) -> None:
        """Moves one arm's reference to measured values, at rest (the other arm
        keeps its reference and its plan). Used when a holding arm has been
        moved away from its reference, e.g. with torque off."""
        q = self.reference.q
        index = self.joint_index(self.profile.arms[side].joints)
        q[index] = [float(joint_q[j]) for j in self.profile.arms[side].joints]
        self.reference.reset_joints(index, q)
        self._set_q(self.reference.q)
        if self.fallback is not None:
            self.fallback.clear(side)

    def set_lift(self, lift_joint: float) -> None:
        """Moves the (frozen) lift joint of the reference configuration."""
        lo, hi = self._lift_range
        q = self.configuration.q.copy()
        q[self._lift_adr] = float(np.clip(lift_joint, lo, hi))
        self.configuration.update(q)

    def set_posture_target(self, arm_q: npt.ArrayLike) -> None:
        """Moves the posture attractor (arm joints only; others keep their value)."""
        target = self.posture_task.target_q.copy() if self.posture_task.target_q is not None else self.configuration.q.copy()
        target[self._qadr] = np.asarray(arm_q, dtype=float)
        self.posture_task.set_target(target)

    def grip_pose(self, side: str) -> Pose:
        """The grip site's current pose in base_link."""
        sid = self.model.site(self.profile.arms[side].grip_site).id
        data = self.configuration.data
        return Pose(data.site_xpos[sid].copy(), matrix_to_quat(data.site_xmat[sid].reshape(3, 3)))

    def min_proxy_distance(self, distmax: float = 1.0) -> float:
        """Smallest signed proxy distance of the reference configuration, capped at
        ``distmax`` (inf without collisions)."""
        if self.collision_pairs is None:
            return float("inf")
        return self.collision_pairs.min_distance(self.configuration.data, distmax)

    # -- one tick -------------------------------------------------------------

    def _freezer(self, active: tuple[bool, bool]) -> mink.DofFreezingTask:
        if active not in self._freezers:
            dofs = list(self._frozen_dofs)
            for side, on in zip(SIDES, active):
                if not on:
                    dofs += self._side_dofs[side]
            self._freezers[active] = mink.DofFreezingTask(self.model, dof_indices=sorted(set(dofs)))
        return self._freezers[active]

    def _set_targets(self, targets: Mapping[str, Pose | None],
                     joint_goals: Mapping[str, np.ndarray] | None = None) -> list[mink.Task]:
        tasks: list[mink.Task] = [self.posture_task]
        for side in SIDES:
            target = targets.get(side)
            if joint_goals and side in joint_goals:
                q = self.configuration.q.copy()
                q[self._qadr[self.joint_index(self.profile.arms[side].joints)]] = joint_goals[side]
                self.goal_tasks[side].set_target(q)
                tasks.append(self.goal_tasks[side])
            elif target is not None:
                self.frame_tasks[side].set_target(pose_to_se3(target))
                tasks.append(self.frame_tasks[side])
        return tasks

    def _merit(self, tasks: Sequence[mink.Task]) -> float:
        """Weighted squared task error at the current configuration (what the QP
        linearises); a step that raises it overshot."""
        total = 0.0
        for task in tasks:
            e = task.cost * task.compute_error(self.configuration)
            total += float(e @ e)
        return total

    def _backtrack(self, q_from: np.ndarray, q_to: np.ndarray, tasks: Sequence[mink.Task], merit0: float) -> np.ndarray:
        """Halves the step (up to ``backtracking_steps`` times) while it raises
        the merit; a step that cannot lower it is not taken. The configuration
        is left at the returned q."""
        if self._merit(tasks) <= merit0 * (1 + 1e-9) + 1e-15:
            return q_to
        step = q_to - q_from
        for k in range(1, self.settings.solver.backtracking_steps + 1):
            q = q_from + step * 0.5**k
            self._set_q(q)
            if self._merit(tasks) <= merit0 * (1 + 1e-9) + 1e-15:
                self.backtracked += 1
                return q
        self._set_q(q_from)
        self.backtracked += 1
        return q_from.copy()

    def solve_velocity(self, targets: Mapping[str, Pose | None]) -> np.ndarray:
        """The QP velocity (nv) for this tick; arms with a None target are frozen.

        Raises:
            IkSolveError: the QP failed or returned non-finite values.
        """
        return self._solve(self._set_targets(targets), tuple(targets.get(side) is not None for side in SIDES))

    def _solve(self, tasks: Sequence[mink.Task], active: tuple[bool, bool], dt: float | None = None) -> np.ndarray:
        """The QP velocity; when the clearance rows' push-out makes the QP
        infeasible (two obstacles pinching a link), it is solved again with rows
        that only forbid approach (always feasible: standing still satisfies them)."""
        try:
            return self._solve_once(tasks, active, dt)
        except IkSolveError:
            limit = getattr(self, "collision_limit", None)
            if limit is None or not np.any(limit.bound(limit.active_distances) < 0):
                raise
        self.collision_limit.relaxed = True
        try:
            v = self._solve_once(tasks, active, dt)
        finally:
            self.collision_limit.relaxed = False
        self.relaxed_solves += 1
        return v

    def _solve_once(self, tasks: Sequence[mink.Task], active: tuple[bool, bool], dt: float | None = None) -> np.ndarray:
        """DAQP is called directly on the QP over the dofs that are not frozen
        (:meth:`_solve_reduced`). Any other solver goes through mink.solve_ik."""
        solver = self.settings.solver
        freezer = self._freezer(active)
        dt = self.dt if dt is None else dt
        if solver.qp_solver != "daqp":
            try:
                v = mink.solve_ik(self.configuration, tasks, dt, solver.qp_solver, damping=solver.regularization,
                                  limits=self.limits, constraints=[freezer])
            except (mink.NoSolutionFound, ValueError) as exc:
                raise IkSolveError(f"QP failed: {exc}") from None
        else:
            v = self._solve_reduced(tasks, active, dt)
        if not np.isfinite(v).all():
            raise IkSolveError("QP returned non-finite velocities")
        return v

    def _reduced_qp(self, active: tuple[bool, bool]) -> "_ReducedQp":
        if active not in self._reduced_qps:
            frozen = set(self._freezer(active).dof_indices)
            self._reduced_qps[active] = _ReducedQp.build(self.model, frozen, self._range_limit, self._speed_limit)
        return self._reduced_qps[active]

    def _solve_reduced(self, tasks: Sequence[mink.Task], active: tuple[bool, bool], dt: float) -> np.ndarray:
        """The same QP as mink's ``build_ik`` with the freezing equalities, solved
        over the free dofs only: a frozen dof's displacement is zero, so its
        columns and rows drop out, and the joint range and speed caps (one
        interval per free dof) become DAQP's simple bounds. Tasks give their
        weighted residuals (mink's), the other limits (clearance rows) their rows.
        Inactive collision rows are dropped; no per-call limit check (the joint
        reference keeps every joint strictly inside its range)."""
        red = self._reduced_qp(active)
        configuration = self.configuration
        q = configuration.q
        # the full QP's range rows on a frozen dof read 0 <= gain * (room left): infeasible outside the range
        frozen_q = q[red.frozen_qadr]
        if np.any(frozen_q > red.frozen_upper) or np.any(frozen_q < red.frozen_lower):
            raise IkSolveError("QP failed: a frozen joint is outside its range")
        v = np.zeros(self.model.nv)
        if not red.free.size:
            return v
        weighted, errors, mu = [], [], 0.0
        for task in tasks:
            residual = task.compute_qp_residual(configuration)
            if residual is None:
                raise IkSolveError(f"QP failed: {type(task).__name__} gives no residual")
            weighted.append(residual[0][:, red.free])
            errors.append(residual[1])
            mu += residual[2]
        w = np.vstack(weighted)
        hessian = w.T @ w
        hessian.flat[:: len(red.free) + 1] += self.settings.solver.regularization + mu
        gradient = -(np.concatenate(errors) @ w)
        qf = q[red.free_qadr]
        upper = np.minimum(red.gain * (red.upper - qf), red.speed * dt)
        lower = np.maximum(red.gain * (red.lower - qf), -red.speed * dt)
        rows, bounds = [], []
        for limit in self.limits:
            if limit is self._range_limit or limit is self._speed_limit:
                continue
            constraint = limit.compute_qp_inequalities(configuration, dt)
            if not constraint.inactive:
                finite = np.isfinite(constraint.h)
                rows.append(constraint.G[finite][:, red.free])
                bounds.append(constraint.h[finite])
        n_rows = sum(len(b) for b in bounds)
        a = np.vstack(rows) if rows else np.zeros((0, len(red.free)))
        upper_all = np.concatenate([upper, *bounds])
        lower_all = np.concatenate([lower, np.full(n_rows, -1e30)])
        x, _, exitflag, _ = daqp.solve(hessian, gradient, a, upper_all, lower_all,
                                       np.zeros(len(upper_all), dtype=np.intc))
        if exitflag <= 0:
            raise IkSolveError(f"QP failed: DAQP exit flag {exitflag}")
        v[red.free] = np.asarray(x) / dt
        return v

    def _guard(self, q_from: np.ndarray, q_to: np.ndarray) -> tuple[np.ndarray, float, float]:
        """The collision guard's verdict on q_from → q_to; leaves the configuration
        at the returned q. Returns (q, fraction of the step kept, min distance)."""
        if self.collision_pairs is None:
            self._set_q(q_to)
            return q_to, 1.0, float("inf")

        def move(q: np.ndarray) -> mujoco.MjData:
            self._set_q(q)
            return self.configuration.data

        return self.guard.check(q_from, q_to, move)

    def _guard_each_arm(self, q_from: np.ndarray, q_to: np.ndarray) -> tuple[np.ndarray, float, float]:
        """The collision guard, each arm shortened only as far as its own step
        needs. Shortening the whole step uniformly makes an arm that slides
        along an obstacle slow the other, free one down with it (an arm turning
        its wrist towards a goal crept at 0.1-0.5 rad/s while the other arm's
        steps were cut to a tenth). So when the guard shortens a step that moves
        both arms, each arm's step is guarded alone (the other held), and the
        two shortened steps together are kept if they pass the guard as a
        whole; otherwise the uniform verdict stands. Whatever is returned has
        passed the guard from ``q_from``. Leaves the configuration at it."""
        q, fraction, dmin = self._guard(q_from, q_to)
        if fraction >= 1.0:
            return q, fraction, dmin
        moving = [idx for idx in self._arm_index.values() if np.any(q_to[idx] != q_from[idx])]
        if len(moving) < 2:
            return q, fraction, dmin
        q_each, kept = q_from.copy(), []
        for idx in moving:
            alone = q_from.copy()
            alone[idx] = q_to[idx]
            f = max(self._guard(q_from, alone)[1], fraction)  # never less than the uniform verdict
            q_each[idx] = q_from[idx] + f * (q_to[idx] - q_from[idx])
            kept.append(f)
        # both arms' steps whole is the step just cut: no need to check it again
        if max(kept) > fraction and min(kept) < 1.0:
            q_both, f_both, d_both = self._guard(q_from, q_each)
            if f_both >= 1.0:
                self.guard_per_arm += 1
                return q_both, min(kept), d_both
        self._set_q(q)
        return q, fraction, dmin

    def tick(self, targets: Mapping[str, Pose | None], dt: float | None = None,
             goals: Mapping[str, Pose | None] | None = None,
             joint_goals: Mapping[str, npt.ArrayLike] | None = None) -> TickResult:
        """Solves for a goal, guards it and advances the reference by one step.

        Args:
            targets: Per arm, a grip target or None (the arm holds).
            dt: Length of this step in seconds (default: the control period);
                the reference advances by it along its jerk-limited plan.
            goals: Per arm, where the target is going (the requested pose before
                any speed shaping; default: ``targets``): what the global
                fallback searches for.
            joint_goals: Per arm, joint values (the arm's 6 joints) to move to
                instead of a grip target (homing); such an arm is active
                whatever its target, and the global fallback leaves it alone.

        A hold or a failed QP sets no new goal: the reference keeps following
        its plan (a moving arm brakes to its last goal within the caps).
        """
        dt = self.dt if dt is None else float(dt)
        if not dt > 0:
            raise IkConfigError(f"tick dt must be > 0, got {dt}")
        fixed = {side: np.asarray(q, dtype=float) for side, q in (joint_goals or {}).items()}
        active = {side: targets.get(side) is not None or side in fixed for side in SIDES}
        q_prev = self.reference.q
        if not any(active.values()):
            if self.fallback is not None:
                self.fallback.plan({})
            return self._coast("hold", dt, active)
        horizon = dt + self.lookahead_s
        lap = self._lap
        t = lap(None, 0.0)
        searched: dict[str, np.ndarray] = {}
        if self.fallback is not None:
            goals = targets if goals is None else goals
            searched = self.fallback.plan({s: goals.get(s) if active[s] and s not in fixed else None
                                           for s in SIDES})
        goal_mode = {side: side in searched for side in SIDES}
        t = lap("fallback plan", t)
        try:
            tasks = self._set_targets(targets, {**searched, **fixed})
            v = self._solve(tasks, (active["left"], active["right"]), horizon)
            merit0 = sum(t.last_merit for t in tasks)  # recorded while the QP was assembled
        except IkSolveError as exc:
            self.failures += 1
            self._set_q(q_prev)
            result = self._coast("failed", dt, active, str(exc))
            result.goal_mode = goal_mode
            return result
        self.solves += 1
        t = lap("QP (assembly + DAQP)", t)
        q_goal = self.reference.clamp(self.configuration.integrate(v, horizon)[self._qadr])
        t = lap("integrate", t)
        q_goal, fraction, dmin = self._guard_each_arm(q_prev, q_goal)
        if fraction < 1.0:
            self.guard_shortened += 1
        t = lap("collision guard", t)
        q_goal = self._backtrack(q_prev, q_goal, tasks, merit0)
        t = lap("backtracking", t)
        q_new = self._checked_proposal(q_prev, q_goal, dt)
        t = lap("joint reference + path check", t)
        self.reference.commit(q_new, dt)
        self._set_q(q_new)
        arrived = {side: False for side in SIDES}
        if self.fallback is not None:
            arrived = self.fallback.after_tick(self.reference.q)
            self.fallback.search_step()
        lap("fallback search", t)
        return TickResult("ok", self.reference.q, self.reference.dq, active, fraction, dmin,
                          goal_mode=goal_mode, arrived=arrived)

    def _lap(self, phase: str | None, since: float) -> float:
        """Adds the time since ``since`` to ``phase_times[phase]`` when a
        ``phase_clock`` was given (benchmarks); returns the clock's reading."""
        if self.phase_clock is None:
            return 0.0
        now = self.phase_clock()
        if phase is not None:
            self.phase_times[phase] = self.phase_times.get(phase, 0.0) + (now - since)
        return now

    def _checked_proposal(self, q_prev: np.ndarray, q_goal: np.ndarray, dt: float) -> np.ndarray:
        """Proposes ``q_goal`` to the reference and checks, with the collision
        guard, the path its plans would take: the configuration commanded now,
        then every control period until they stop. While that fails, an arm
        steps down to a safer mode (follow the goal → brake now → keep its
        current plan, whose path passed this check when it was accepted): one
        arm at a time first, then both. Leaves the proposal pending and returns
        the configuration after ``dt``."""
        q_new = self.reference.propose(q_goal, dt)
        if self.collision_pairs is None or self.settings.collision.guard_distance_m is None:
            return q_new
        modes = self.reference.pending_modes
        while not self._path_is_safe(q_prev, self._checked_points(q_new)):
            self.plans_refused += 1
            safer = [SAFER[m] for m in modes]
            if safer == modes:
                break  # every arm keeps its plan: nothing else stays within the caps
            singles = [modes[:k] + [safer[k]] + modes[k + 1:] for k in range(len(modes)) if safer[k] != modes[k]]
            for trial in singles if len(singles) > 1 else []:
                q_new = self.reference.propose(q_goal, dt, trial)
                if self._path_is_safe(q_prev, self._checked_points(q_new)):
                    return q_new
            q_new = self.reference.propose(q_goal, dt, safer)
            modes = self.reference.pending_modes
        return q_new

    def _checked_points(self, q_new: np.ndarray) -> np.ndarray:
        """What the guard checks of a proposal: the path its plans take, from the
        configuration commanded now, every control period, to where they stop."""
        return self.reference.pending_path(self.dt)

    def _path_is_safe(self, q_prev: np.ndarray, path: Sequence[np.ndarray]) -> bool:
        """Every configuration of ``path`` passes the collision guard from q_prev
        (kinematics on a scratch copy: the working configuration stays put)."""
        scratch = self._scratch
        scratch.qpos[:] = self.configuration.q

        def move(q: np.ndarray) -> mujoco.MjData:
            scratch.qpos[self._qadr] = q
            mujoco.mj_kinematics(self.model, scratch)
            return scratch

        passed, closest = self.guard.path_passes(q_prev, path, move)
        if not passed:
            return False
        # between the points a later tick of another length commands: every
        # 1/PATH_SUBDIVISIONS of the spacing where a pair is near the guard
        close = self.guard.guard + self.guard.band
        inner = np.arange(1, self.path_subdivisions) / self.path_subdivisions
        for k in range(len(path) - 1 if inner.size else 0):
            if min(closest[k], closest[k + 1]) < close:
                points = self.reference.pending_points((k + inner) * self.dt)
                if not self.guard.check_between(q_prev, path[k], path[k + 1], points, move):
                    return False
        return True

    def _coast(self, status: str, dt: float, active: dict[str, bool], error: str = "") -> TickResult:
        """No new goal: the reference follows its current plans for ``dt``."""
        self.reference.hold(dt)
        self._set_q(self.reference.q)
        return TickResult(status, self.reference.q, self.reference.dq, active, 1.0 if status == "hold" else 0.0,
                          float("nan"), error)

    def settle_step(self, targets: Mapping[str, Pose | None], dt: float | None = None) -> np.ndarray:
        """One unpaced step for offline planning: QP, integrate, collision guard;
        the reference jumps to the result (no speed/acceleration guard, which
        belongs to real-time streaming). Returns the joint displacement taken.

        Args:
            targets: Per arm, a grip target or None (the arm stays).
            dt: Step length for the QP's speed rows (default: the control
                period); a longer one lets a far sample settle in fewer steps.

        Raises:
            IkSolveError: the QP failed (the configuration is unchanged).
        """
        dt = self.dt if dt is None else float(dt)
        q_prev = self.arm_q()
        tasks = self._set_targets(targets)
        v = self._solve(tasks, tuple(targets.get(side) is not None for side in SIDES), dt)
        merit0 = sum(t.last_merit for t in tasks)
        self.solves += 1
        q_new = self.reference.clamp(self.configuration.integrate(v, dt)[self._qadr])
        q_safe, _, _ = self._guard(q_prev, q_new)
        q_safe = self._backtrack(q_prev, q_safe, tasks, merit0)
        self.reference.reset(q_safe)
        if not np.array_equal(self.reference.q, q_safe):
            self._set_q(self.reference.q)
        return q_safe - q_prev

    def gripper_range(self, side: str) -> tuple[float, float]:
        return self._gripper_ranges[side]

    def joint_index(self, names: Sequence[str]) -> np.ndarray:
        """Positions of ``names`` in arm_joint_names."""
        pos = {n: i for i, n in enumerate(self.arm_joint_names)}
        return np.array([pos[n] for n in names])
