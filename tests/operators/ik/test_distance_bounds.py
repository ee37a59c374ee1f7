"""Distance bounds against MuJoCo's own distances on the whole robot model:
a bound never exceeds the distance ``mj_geomDistance`` measures, the bounded
helpers return exactly what the unbounded ones do, and the collision guard
gives the same verdict on a plan's path with and without them."""

from __future__ import annotations

import mink
import mujoco
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora import models
from teledora.models.config_files import load_ik_config
from teledora.operators.ik.clearance_limit import ClearanceLimit
from teledora.operators.ik.collision_guard import CollisionGuard
from teledora.operators.ik.collision_pairs import moving_dofs, pair_levers_m
from teledora.operators.ik.distance_bounds import DistanceBounds
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk

PROFILE = models.load_profile()
SETTINGS = load_ik_config().settings
MODEL = build_ik_model(models.path(SETTINGS.solver.model), True)
ARM_JOINTS = [j for s in ("left", "right") for j in PROFILE.arms[s].joints]
LIFT_TOP = PROFILE.lift_height_to_joint(PROFILE.lift.travel_mm / 1000.0)

arm_q = st.lists(st.floats(-np.pi, np.pi), min_size=len(ARM_JOINTS), max_size=len(ARM_JOINTS))
step = st.lists(st.floats(-0.3, 0.3), min_size=len(ARM_JOINTS), max_size=len(ARM_JOINTS))


@pytest.fixture(scope="module")
def solver() -> BimanualIk:
    return BimanualIk(MODEL, PROFILE, SETTINGS)


def _place(solver: BimanualIk, q, lift: float) -> tuple[np.ndarray, mujoco.MjData]:
    """Sets a fresh data to arm values q (clipped to the ranges) at a lift fraction."""
    q = np.clip(np.asarray(q, dtype=float), solver.reference.lower_inner, solver.reference.upper_inner)
    data = mujoco.MjData(MODEL)
    data.qpos[:] = solver.configuration.q
    data.qpos[solver._qadr] = q
    data.qpos[solver._lift_adr] = lift * LIFT_TOP
    mujoco.mj_kinematics(MODEL, data)
    return q, data


def _exact(solver: BimanualIk, data: mujoco.MjData, cap: float) -> np.ndarray:
    return np.array([mujoco.mj_geomDistance(MODEL, data, a, b, cap, np.empty(6))
                     for a, b in solver.collision_pairs.id_pairs])


def test_a_joint_has_a_lever_on_a_pair_only_when_it_moves_one_geom_of_it(solver):
    """A joint that turns both geoms of a pair (a shoulder under a wrist and
    an upper arm) or neither cannot change their distance; one that moves one
    of them can."""
    pairs = solver.collision_pairs
    levers = pair_levers_m(MODEL, pairs.id_pairs, ARM_JOINTS)
    dofs = [int(MODEL.jnt_dofadr[MODEL.joint(j).id]) for j in ARM_JOINTS]
    both = 0
    for k, (a, b) in enumerate(pairs.id_pairs):
        moves_a = moving_dofs(MODEL, int(MODEL.geom_bodyid[a]))
        moves_b = moving_dofs(MODEL, int(MODEL.geom_bodyid[b]))
        for j, dof in enumerate(dofs):
            assert (levers[k, j] > 0) == ((dof in moves_a) != (dof in moves_b)), (pairs.name(a), pairs.name(b), ARM_JOINTS[j])
            both += (dof in moves_a) and (dof in moves_b)
    assert both > 0, "no pair has a joint above both of its geoms: the case is not exercised"


@settings(max_examples=40, deadline=None)
@given(q0=arm_q, dq=step, lift0=st.floats(0.0, 1.0), dlift=st.floats(-0.2, 0.2))
def test_a_bound_never_exceeds_the_distance_mujoco_measures(solver, q0, dq, lift0, dlift):
    """Every pair measured at one configuration, then the arms and the lift
    moved: each pair's bound at the new configuration is at most its distance there."""
    bounds = DistanceBounds(solver.collision_pairs, ARM_JOINTS)
    qa, a = _place(solver, q0, lift0)
    bounds.sync(a.qpos)
    bounds.record(np.arange(len(solver.collision_pairs)), _exact(solver, a, bounds.reach_m), qa)
    qb, b = _place(solver, qa + np.asarray(dq), float(np.clip(lift0 + dlift, 0.0, 1.0)))
    bounds.sync(b.qpos)
    exact = _exact(solver, b, bounds.reach_m)
    assert np.all(bounds.lower_bounds(qb) <= exact + 1e-9)


@settings(max_examples=30, deadline=None)
@given(q0=arm_q, steps=st.lists(step, min_size=2, max_size=6), lift=st.floats(0.0, 1.0),
       distmax=st.sampled_from([0.0085, 0.02, 0.05]))
def test_bounded_distances_are_the_exact_ones(solver, q0, steps, lift, distmax):
    """Along a walk, the bounded helper returns the unbounded one's array bit for bit."""
    pairs = solver.collision_pairs
    bounds = DistanceBounds(pairs, ARM_JOINTS)
    q = np.asarray(q0, dtype=float)
    path = []
    for s in steps:
        q, data = _place(solver, q + 0.3 * np.asarray(s), lift)
        path.append(q)
        assert np.array_equal(bounds.distances_near(data, distmax), pairs.distances_near(data, distmax))


@settings(max_examples=30, deadline=None)
@given(qa=arm_q, qb=arm_q, lift=st.floats(0.0, 1.0), distmax=st.sampled_from([0.0085, 0.02, 0.05]))
def test_no_pair_close_at_a_path_point_is_left_off_its_list(solver, qa, qb, lift, distmax):
    """Every pair measured at one posture, then a straight path from there to
    another: at each of its points, every pair MuJoCo measures within
    ``distmax`` is among the pairs the bounds leave to be measured."""
    bounds = DistanceBounds(solver.collision_pairs, ARM_JOINTS)
    qa, a = _place(solver, qa, lift)
    bounds.sync(a.qpos)
    bounds.record(np.arange(len(solver.collision_pairs)), _exact(solver, a, bounds.reach_m), qa)
    path = np.array([_place(solver, qa + t * (np.asarray(qb) - qa), lift)[0] for t in np.linspace(0.0, 1.0, 8)])
    for q, unsure in zip(path, bounds.unsure_along(path, distmax)):
        close = np.flatnonzero(_exact(solver, _place(solver, q, lift)[1], distmax) < distmax)
        assert set(close.tolist()) <= set(unsure.tolist())


def test_lowering_the_lift_lowers_the_bounds_of_the_pairs_it_moves(solver):
    """The lift is not one of the bounds' joints: a move of it is followed by
    ``sync``, and a pair it brings closer is never bounded above its distance."""
    bounds = DistanceBounds(solver.collision_pairs, ARM_JOINTS)
    q, a = _place(solver, solver.reference.q, 0.3)
    bounds.sync(a.qpos)
    before = _exact(solver, a, bounds.reach_m)
    bounds.record(np.arange(len(before)), before, q)
    _, b = _place(solver, q, 0.25)
    after = _exact(solver, b, bounds.reach_m)
    assert np.any(after < before - 1e-3), "no pair came closer: the case is not exercised"
    bounds.sync(b.qpos)
    lower = bounds.lower_bounds(q)
    assert np.isfinite(lower).all(), "a lift move made the bounds forget what was measured"
    assert np.all(lower <= after + 1e-9)


@settings(max_examples=40, deadline=None)
@given(q0=arm_q, direction=step, lift=st.floats(0.0, 1.0), length=st.floats(0.05, 1.0))
def test_the_guard_gives_the_same_verdict_on_a_path_with_and_without_bounds(solver, q0, direction, lift, length):
    """A straight path of ten points from a clear posture: passed or not, and
    the closest distance reported per point, the same as measuring every pair everywhere."""
    q_from, _ = _place(solver, q0, lift)
    path = [_place(solver, q_from + length * t * np.asarray(direction), lift)[0] for t in np.linspace(0.1, 1.0, 10)]
    bounded = CollisionGuard(solver.collision_pairs, solver.collision_limit, SETTINGS.collision.guard_distance_m,
                             None, DistanceBounds(solver.collision_pairs, ARM_JOINTS))
    plain = CollisionGuard(solver.collision_pairs, solver.collision_limit, SETTINGS.collision.guard_distance_m, None)

    def move(q: np.ndarray) -> mujoco.MjData:
        return _place(solver, q, lift)[1]

    assert bounded.path_passes(q_from, path, move) == plain.path_passes(q_from, path, move)


@settings(max_examples=20, deadline=None)
@given(q0=arm_q, steps=st.lists(step, min_size=2, max_size=6), lift=st.floats(0.0, 1.0))
def test_the_clearance_rows_are_the_same_with_and_without_bounds(solver, q0, steps, lift):
    """Along a walk, the QP's clearance rows (pairs, matrix and bounds) built
    with the distance bounds are bit for bit those built measuring every pair
    the broadphase keeps."""
    c = SETTINGS.collision
    pairs = solver.collision_pairs
    bounded = ClearanceLimit(pairs, c.gain, c.minimum_distance_m, c.detection_distance_m, c.barrier_margin_m,
                             DistanceBounds(pairs, ARM_JOINTS))
    plain = ClearanceLimit(pairs, c.gain, c.minimum_distance_m, c.detection_distance_m, c.barrier_margin_m)
    configuration = mink.Configuration(MODEL)
    q = np.asarray(q0, dtype=float)
    for s in steps:
        q, data = _place(solver, q + 0.1 * np.asarray(s), lift)
        configuration.update(data.qpos.copy())
        a = bounded.compute_qp_inequalities(configuration, 0.01)
        b = plain.compute_qp_inequalities(configuration, 0.01)
        assert np.array_equal(bounded.active, plain.active)
        assert (a.G is None) == (b.G is None)
        if a.G is not None:
            assert np.array_equal(a.G, b.G) and np.array_equal(a.h, b.h)
