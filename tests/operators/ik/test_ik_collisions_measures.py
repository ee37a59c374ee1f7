"""The adversarial collision check's two distance measures: the exact one
(``mj_geomDistance``, which the IK keeps the clearance on) and the contacts of
``mj_collision`` with a margin, each reported on its own with its pair and
episode."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

_BENCH = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(_BENCH))
_spec = importlib.util.spec_from_file_location("ik_collisions_measures_bench", _BENCH / "ik_collisions.py")
adversarial = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = adversarial
_spec.loader.exec_module(adversarial)

from ik_node_driver import MujocoCollisionCheck  # noqa: E402

BOX, CAPSULE, PLANE = int(mujoco.mjtGeom.mjGEOM_BOX), int(mujoco.mjtGeom.mjGEOM_CAPSULE), int(mujoco.mjtGeom.mjGEOM_PLANE)
ANALYTIC = {BOX, CAPSULE, PLANE}


@pytest.fixture(scope="module")
def check():
    return MujocoCollisionCheck()


@pytest.fixture(scope="module")
def contacts(check):
    return adversarial.ContactDistances(check)


def _set_random_pose(check, fractions, lift_fraction):
    m = check.model
    q = [m.joint(n).range[0] + f * (m.joint(n).range[1] - m.joint(n).range[0]) for n, f in zip(check._adr, fractions)]
    check.set(list(check._adr), q, lift_fraction * check.profile.lift.travel_mm / 1000.0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fractions=st.lists(st.floats(0.0, 1.0), min_size=14, max_size=14), lift=st.floats(0.0, 1.0))
def test_contacts_are_the_filter_pairs_within_the_margin_and_exact_off_box_box(check, contacts, fractions, lift):
    _set_random_pose(check, fractions, lift)
    found = contacts.distances(check.data.qpos)
    allowed = set(check.pairs)
    for (g1, g2), d in found.items():
        assert (g1, g2) in allowed
        assert d < adversarial.CONTACT_MARGIN_M
        kinds = {int(check.model.geom_type[g1]), int(check.model.geom_type[g2])}
        if kinds <= ANALYTIC and kinds & {CAPSULE, PLANE}:
            # these colliders report a separated pair's distance itself
            # (penetration depths may differ); box-box and cylinders: below
            exact = mujoco.mj_geomDistance(check.model, check.data, g1, g2, 1.0, None)
            if exact >= 0:
                assert d == pytest.approx(exact, abs=1e-9)


def test_box_box_contacts_are_not_the_distance(check, contacts):
    # MuJoCo's box-box collider: a separated pair's contact.dist is a depth along
    # the normal it picks, not the distance between the boxes
    rng = np.random.default_rng(3)
    below = above = 0
    for _ in range(200):
        _set_random_pose(check, rng.uniform(size=len(check._adr)), rng.uniform())
        for (g1, g2), d in contacts.distances(check.data.qpos).items():
            if check.model.geom_type[g1] == BOX and check.model.geom_type[g2] == BOX:
                exact = mujoco.mj_geomDistance(check.model, check.data, g1, g2, 1.0, None)
                if exact > 0:
                    below += d < exact - 1e-3
                    above += d > exact + 1e-3
    assert below > 0 and above > 0


def test_a_run_reports_each_measure_with_its_pair_and_episode(check, contacts):
    loop = adversarial.make_adversarial_loop()
    res = adversarial.run(loop, episodes=1, seed=11, legs=4, check=check, first=2, contacts=contacts)
    clearance = loop.ik.settings.collision.minimum_distance_m
    c = res.contact
    assert res.worst_episode == c.worst_episode == 2
    assert res.worst_pair and c.worst_pair
    assert c.min_distance_m < adversarial.CONTACT_MARGIN_M
    # the contacts' closest pair, measured exactly on that solve, keeps the IK's clearance
    assert c.exact_at_worst_m >= res.min_distance_m >= clearance
    assert c.below_clearance >= 0 and res.below_clearance == 0


def _minimised_distance(check, g1, g2):
    """Distance between a box and a box or capsule by direct minimisation over
    points of both (a convex problem: its local minimum is the global one)."""
    m, d = check.model, check.data
    p1, r1 = d.geom_xpos[g1], d.geom_xmat[g1].reshape(3, 3)
    p2, r2 = d.geom_xpos[g2], d.geom_xmat[g2].reshape(3, 3)
    s1, s2 = m.geom_size[g1], m.geom_size[g2]
    radius = 0.0
    if m.geom_type[g2] == CAPSULE:  # its axis segment, inflated by its radius
        radius, s2 = s2[0], np.array([0.0, 0.0, s2[1]])

    def gap(x):
        v = p1 + r1 @ x[:3] - p2 - r2 @ x[3:]
        return v @ v, np.concatenate([2 * r1.T @ v, -2 * r2.T @ v])

    res = minimize(gap, np.zeros(6), jac=True, method="L-BFGS-B", bounds=[(-a, a) for a in np.r_[s1, s2]],
                   options={"ftol": 1e-16, "gtol": 1e-14, "maxiter": 2000})
    return np.sqrt(res.fun) - radius


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fractions=st.lists(st.floats(0.0, 1.0), min_size=14, max_size=14), lift=st.floats(0.0, 1.0))
def test_the_iks_measure_is_the_distance_between_the_shapes(check, fractions, lift):
    # the clearance is kept on mj_geomDistance: it must never read a pair farther
    # apart than its shapes are
    _set_random_pose(check, fractions, lift)
    m = check.model
    for g1, g2 in check.pairs:
        if m.geom_type[g1] != BOX:
            g1, g2 = g2, g1
        if m.geom_type[g1] != BOX or m.geom_type[g2] not in (BOX, CAPSULE):
            continue
        exact = mujoco.mj_geomDistance(m, check.data, g1, g2, 0.02, None)
        if 0 < exact < 0.02:
            # never above the distance of two points of the shapes (what the
            # clearance's safety rests on); below it is allowed: for two boxes
            # MuJoCo can read a few mm short (8.43 mm for a carriage plate and a
            # jaw servo 11.87 mm apart), which costs reach, not safety
            minimised = _minimised_distance(check, g1, g2)
            assert exact <= minimised + 1e-9
            if m.geom_type[g2] == CAPSULE:  # box-capsule pairs read exactly
                assert exact >= minimised - 1e-4
