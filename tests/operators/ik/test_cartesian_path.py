"""Straight-line Cartesian paths: min-jerk timing, sparse solves + spline, tolerances, pinning."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from teledora import models
from teledora.operators.ik.cartesian_path import CartesianPathPlanner, PathConfig, PathPlanningError, min_jerk
from teledora.operators.ik.ik_solver import BimanualIk, GripTarget, IkSettings, build_ik_model

DATA = models.load_yaml("alohamini2/ik.yaml")
SETTINGS = IkSettings.from_mapping(DATA)
MODEL = build_ik_model(models.path(SETTINGS.solver.model), SETTINGS.solver.add_floor)
PROFILE = models.load_profile()
CONFIG = PathConfig.from_mapping(DATA["path"])


@pytest.fixture(scope="module")
def planner() -> CartesianPathPlanner:
    return CartesianPathPlanner(BimanualIk(MODEL, PROFILE, SETTINGS), CONFIG)


def solve_offsets(planner, q0, left_offset, right_offset):
    """A configuration whose grips sit at the given offsets from q0's grips."""
    ik = planner.ik
    ik.reset(q0, 0.0)
    targets = {s: GripTarget.of(ik.grip_pose(s).position + off, ik.grip_pose(s).orientation)
               for s, off in (("left", left_offset), ("right", right_offset))}
    for _ in range(400):
        ik.settle_step(targets)
    for s in ("left", "right"):
        assert np.linalg.norm(ik.grip_pose(s).position - targets[s].position) < 1e-3
    return ik.arm_q()


# An unfolded posture to plan from: at the folded home posture the arm's own
# links (upper arm on its mount, wrist by the shoulder) leave a straight line
# little room in most directions.
READY = {"shoulder_pan": 0.0, "shoulder_lift": -0.6, "elbow_flex": 0.3, "wrist_flex": 0.6, "wrist_yaw_joint": 0.0,
         "wrist_roll": 0.0}


@pytest.fixture(scope="module")
def home(planner) -> np.ndarray:
    return np.array([READY[n.split("_", 1)[1]] for n in planner.ik.arm_joint_names])


def test_min_jerk_profile_shape():
    s, ds, dds = min_jerk(np.array([0.0, 0.5, 1.0]))
    np.testing.assert_allclose(s, [0.0, 0.5, 1.0])
    np.testing.assert_allclose(ds[[0, 2]], 0.0)
    np.testing.assert_allclose(dds[[0, 2]], 0.0)
    assert ds[1] == pytest.approx(1.875)  # peak speed is 1.875 x average


def test_leg_follows_the_line_and_lands(planner, home):
    q_a = solve_offsets(planner, home, [0.0, 0.0, -0.15], [0.0, 0.0, -0.15])
    q_b = solve_offsets(planner, q_a, [0.08, 0.0, 0.06], [0.06, 0.0, 0.08])
    plan = planner.plan(q_a, q_b, speed_m_s=0.2, lift_joint=0.0)
    assert plan.max_line_deviation_m < CONFIG.line_tolerance_m
    assert plan.landing_error_m < 1e-3
    np.testing.assert_allclose(plan.q[0], q_a, atol=1e-6)  # starts where it is
    assert plan.times[-1] == pytest.approx(plan.duration_s)
    assert plan.duration_s == pytest.approx(0.1 / 0.2, rel=2e-3)  # average speed = length / duration
    # zero velocity at both ends (clamped spline), sparse knots
    assert np.max(np.abs(plan.q[1] - plan.q[0])) < 1e-3
    assert np.max(np.abs(plan.q[-1] - plan.q[-2])) < 1e-3
    assert len(plan.knot_times) < len(plan.times) / 3
    assert not any(plan.pinned.values())


def test_knot_spacing_respects_max_step(planner, home):
    q_a = solve_offsets(planner, home, [0.0, 0.0, -0.15], [0.0, 0.0, -0.15])
    q_b = solve_offsets(planner, q_a, [0.1, 0.0, 0.0], [0.1, 0.0, 0.0])
    plan = planner.plan(q_a, q_b, speed_m_s=1.0, lift_joint=0.0)
    s, _, _ = min_jerk(plan.knot_times / plan.duration_s)
    assert np.max(np.diff(s)) * 0.1 <= CONFIG.max_step_m + 1e-12
    # the distance bound, not the rate floor, set the knot count: same knots at any speed
    slow = planner.plan(q_a, q_b, speed_m_s=0.05, lift_joint=0.0)
    assert len(slow.knot_times) == len(plan.knot_times) or slow.duration_s * CONFIG.plan_rate_hz > len(plan.knot_times)
    assert slow.max_line_deviation_m < CONFIG.line_tolerance_m


def test_arm_below_min_travel_is_pinned(planner, home):
    q_a = solve_offsets(planner, home, [0.0, 0.0, -0.1], [0.0, 0.0, -0.1])
    q_b = q_a.copy()
    right = planner.ik.joint_index(PROFILE.arms["right"].joints)
    left = planner.ik.joint_index(PROFILE.arms["left"].joints)
    q_b[right] += 1e-3  # drift, not intent
    q_b[left[1]] += 0.2
    plan = planner.plan(q_a, q_b, lift_joint=0.0)
    assert plan.pinned == {"left": False, "right": True}
    np.testing.assert_array_equal(plan.q[:, right], np.tile(q_a[right], (len(plan.times), 1)))


def test_no_motion_gives_a_single_sample(planner, home):
    plan = planner.plan(home, home, lift_joint=0.0)
    assert plan.duration_s == 0.0 and plan.q.shape == (1, 12)


def test_unreachable_sample_raises_before_returning(planner, home):
    # from in front of the robot round to its back: the straight line between
    # the grips runs through the column, where no grip can go
    q_b = home.copy()
    tight = dataclasses.replace(CONFIG, pos_tolerance_m=1e-4, ori_tolerance_rad=1e-3)
    strict = CartesianPathPlanner(planner.ik, tight)
    q_far = home.copy()
    q_far[planner.ik.joint_index(["left_shoulder_pan", "right_shoulder_pan"])] += [2.6, -2.6]
    with pytest.raises(PathPlanningError, match="unreachable|leaves its line"):
        strict.plan(q_b, q_far, lift_joint=0.0)


def test_config_errors():
    bad = dict(DATA["path"])
    del bad["max_step_m"]
    with pytest.raises(PathPlanningError, match="max_step_m"):
        PathConfig.from_mapping(bad)
