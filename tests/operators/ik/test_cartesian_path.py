"""Straight-line Cartesian paths: sparse knots + spline, refinement, joint-timed
under the caps, checked at and between samples, tolerances, pinning, refusals."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import load_ik_config
from teledora.operators.geometry import Pose
from teledora.operators.ik import cartesian_path
from teledora.operators.ik.cartesian_path import CartesianPathPlanner, PathConfig, PathPlanningError
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk

DATA = models.load_yaml("alohamini2/ik.yaml")
IK = load_ik_config()
SETTINGS = IK.settings
MODEL = build_ik_model(models.path(SETTINGS.solver.model), SETTINGS.solver.add_floor)
PROFILE = models.load_profile()
CONFIG = IK.path
CAPS = SETTINGS.joint_reference
DT = 1.0 / CONFIG.output_rate_hz


@pytest.fixture(scope="module")
def planner() -> CartesianPathPlanner:
    return CartesianPathPlanner(BimanualIk(MODEL, PROFILE, SETTINGS), CONFIG)


def solve_offsets(planner, q0, left_offset, right_offset):
    """A configuration whose grips sit at the given offsets from q0's grips."""
    ik = planner.ik
    ik.reset(q0, 0.0)
    targets = {s: Pose.of(ik.grip_pose(s).position + off, ik.grip_pose(s).orientation)
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


@pytest.fixture(scope="module")
def leg(planner, home) -> tuple[np.ndarray, np.ndarray]:
    q_a = solve_offsets(planner, home, [0.0, 0.0, -0.15], [0.0, 0.0, -0.15])
    return q_a, solve_offsets(planner, q_a, [0.08, 0.0, 0.06], [0.06, 0.0, 0.08])


def tips(q: np.ndarray, lift_joint: float = 0.0) -> dict[str, np.ndarray]:
    """Grip positions by plain MuJoCo forward kinematics (independent of the planner)."""
    data = mujoco.MjData(MODEL)
    qadr = [MODEL.joint(n).qposadr[0] for s in ("left", "right") for n in PROFILE.arms[s].joints]
    data.qpos[MODEL.joint(PROFILE.lift_joint).qposadr[0]] = lift_joint
    out = {s: [] for s in ("left", "right")}
    for row in q:
        data.qpos[qadr] = row
        mujoco.mj_kinematics(MODEL, data)
        for s in out:
            out[s].append(data.site(PROFILE.arms[s].grip_site).xpos.copy())
    return {s: np.array(v) for s, v in out.items()}


def rest_padded_peaks(q: np.ndarray, dt: float) -> tuple[float, float]:
    """Peak joint speed and acceleration by finite differences, at rest before and after."""
    padded = np.vstack([q[:1], q, q[-1:]])
    return float(np.abs(np.diff(padded, axis=0)).max() / dt), float(np.abs(np.diff(padded, 2, axis=0)).max() / dt**2)


def test_leg_follows_the_line_lands_and_starts_and_ends_at_rest(planner, leg):
    q_a, q_b = leg
    plan = planner.plan(q_a, q_b, speed_m_s=0.2, lift_joint=0.0)
    np.testing.assert_allclose(plan.q[0], q_a, atol=1e-12)  # starts where it is
    np.testing.assert_allclose(np.diff(plan.times), DT, atol=1e-12)
    assert plan.times[-1] == pytest.approx(plan.duration_s)
    assert plan.max_line_deviation_m <= CONFIG.line_tolerance_m
    assert plan.landing_error_m <= 2 * CONFIG.landing_tolerance_m
    # the planner's figures agree with plain forward kinematics of the samples
    t = tips(plan.q)
    for s in ("left", "right"):
        a, b = plan.start[s].position, plan.goal[s].position
        u = (b - a) / np.linalg.norm(b - a)
        off_line = np.linalg.norm((t[s] - a) - np.outer((t[s] - a) @ u, u), axis=1)
        assert off_line.max() <= plan.max_line_deviation_m + 1e-12
    assert max(np.linalg.norm(t[s][-1] - plan.goal[s].position) for s in t) == pytest.approx(plan.landing_error_m)
    # at rest at both ends: the first and last steps are tiny
    assert np.max(np.abs(plan.q[1] - plan.q[0])) < 1e-3 and np.max(np.abs(plan.q[-1] - plan.q[-2])) < 1e-3
    assert len(plan.knot_s) < len(plan.times) / 3 and not any(plan.pinned.values())


def test_samples_stay_within_the_joint_caps_and_a_fast_leg_reaches_them(planner, leg):
    q_a, q_b = leg
    plan = planner.plan(q_a, q_b, speed_m_s=2.0, angular_speed_rad_s=10.0, lift_joint=0.0)
    speed, accel = rest_padded_peaks(plan.q, DT)
    assert speed <= CAPS.max_speed_rad_s and accel <= CAPS.max_accel_rad_s2
    assert (speed, accel) == pytest.approx((plan.peak_joint_speed_rad_s, plan.peak_joint_accel_rad_s2))
    # time-optimal: some cap binds (joint speed, or the tip acceleration cap)
    tip_acc = max(np.linalg.norm(np.diff(v, 2, axis=0), axis=1).max() for v in tips(plan.q).values()) / DT**2
    assert speed >= 0.85 * CAPS.max_speed_rad_s or tip_acc >= 0.85 * CONFIG.max_tip_accel_m_s2


def test_a_slow_leg_keeps_to_the_requested_tip_speed(planner, leg):
    q_a, q_b = leg
    plan = planner.plan(q_a, q_b, speed_m_s=0.05, lift_joint=0.0)
    tip_speed = max(np.linalg.norm(np.diff(v, axis=0), axis=1).max() for v in tips(plan.q).values()) / DT
    assert 0.9 * 0.05 <= tip_speed <= 0.05 * 1.01
    assert plan.duration_s > 0.1 / 0.05  # longer than the line at that speed: it has to speed up and slow down


def test_knots_are_at_most_a_step_apart_and_do_not_depend_on_speed(planner, leg):
    q_a, q_b = leg
    fast = planner.plan(q_a, q_b, speed_m_s=1.0, lift_joint=0.0)
    slow = planner.plan(q_a, q_b, speed_m_s=0.05, lift_joint=0.0)
    travel = max(np.linalg.norm(fast.goal[s].position - fast.start[s].position) for s in ("left", "right"))
    assert np.max(np.diff(fast.knot_s)) * travel <= CONFIG.max_step_m + 1e-12
    np.testing.assert_array_equal(fast.knot_s, slow.knot_s)
    np.testing.assert_allclose(fast.knot_q, slow.knot_q, atol=1e-12)
    assert slow.duration_s > fast.duration_s


def test_sparse_knots_are_refined_where_the_spline_leaves_the_line(planner, leg):
    q_a, q_b = leg
    # two knot intervals, knots solved to 0.05 mm, splits wanted above 0.02 mm
    coarse = dataclasses.replace(CONFIG, max_step_m=0.1, max_step_rad=1.0, settle_fraction=0.0005, knot_refine_m=2e-5)
    unrefined = CartesianPathPlanner(planner.ik, dataclasses.replace(coarse, max_refinements=0))
    before = unrefined.plan(q_a, q_b, speed_m_s=0.2, lift_joint=0.0)
    refined = CartesianPathPlanner(planner.ik, coarse).plan(q_a, q_b, speed_m_s=0.2, lift_joint=0.0)
    assert len(before.knot_s) == 3 and before.max_line_deviation_m > 5 * coarse.knot_refine_m
    assert len(refined.knot_s) > 3
    assert refined.max_line_deviation_m < before.max_line_deviation_m / 5


def test_the_line_is_checked_between_samples(planner, leg, monkeypatch):
    q_a, q_b = leg
    real = cartesian_path.sample_at_rate

    def skipping(path, rate_hz):  # three samples in four dropped: chords four times as long
        times, q = real(path, rate_hz)
        return times[::4] / 1.0, q[::4]

    monkeypatch.setattr(cartesian_path, "sample_at_rate", skipping)
    checked = CartesianPathPlanner(planner.ik, dataclasses.replace(CONFIG, line_check_step_m=1e-4, line_tolerance_m=1.0))
    unchecked = CartesianPathPlanner(planner.ik, dataclasses.replace(CONFIG, line_check_step_m=10.0, line_tolerance_m=1.0))
    dense = checked.plan(q_a, q_b, speed_m_s=1.0, lift_joint=0.0).max_line_deviation_m
    sparse = unchecked.plan(q_a, q_b, speed_m_s=1.0, lift_joint=0.0).max_line_deviation_m
    assert dense > sparse  # the chords between samples leave the line more than the samples do


def test_a_timing_that_breaks_a_joint_cap_is_refused_naming_the_joint(planner, leg, monkeypatch):
    q_a, q_b = leg
    real = cartesian_path.sample_at_rate

    def rushed(path, rate_hz):  # the samples of a timing twice as fast as planned
        times, q = real(path, rate_hz)
        return times[: (len(times) + 1) // 2], q[::2]

    monkeypatch.setattr(cartesian_path, "sample_at_rate", rushed)
    with pytest.raises(PathPlanningError, match=r"joint \w+ would reach .* \(cap "):
        planner.plan(q_a, q_b, speed_m_s=2.0, angular_speed_rad_s=10.0, lift_joint=0.0)


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
    with pytest.raises(PathPlanningError, match="joint_cap_margin"):
        PathConfig.from_mapping(dict(DATA["path"], joint_cap_margin=1.5))
