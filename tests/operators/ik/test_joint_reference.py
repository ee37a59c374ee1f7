"""Jerk-limited joint reference: caps at every tick (checked by finite
differences of the published positions), braking, reversals, holds,
independent groups, bounds, and the proposal/commit contract."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.ik.joint_reference import JointReference, JointReferenceConfig, JointReferenceError

DT = 0.01
CAPS = JointReferenceConfig(1.5, 40.0, 2000.0)
# float tolerance of the checks: the generator's own rounding, amplified by
# the divided differences (1/dt^3 for jerk)
REL = 1e-6


def make(n: int = 3, groups=None, lower=-3.0, upper=3.0, caps: JointReferenceConfig = CAPS) -> JointReference:
    ref = JointReference([f"j{i}" for i in range(n)], [lower] * n, [upper] * n, caps, groups)
    ref.reset(np.zeros(n))
    return ref


def step(ref: JointReference, goal, dt: float = DT) -> np.ndarray:
    q = ref.propose(goal, dt)
    ref.commit(q, dt)
    return q


def derivatives(t: np.ndarray, q: np.ndarray, order: int) -> np.ndarray:
    """order-th derivative estimates from divided differences of samples at
    (possibly uneven) times t: order! * q[t_k .. t_k+order]. For a motion
    whose order-th derivative is bounded by c, every estimate is bounded by c."""
    d = q.astype(float)
    for k in range(1, order + 1):
        d = (d[1:] - d[:-1]) / (t[k:] - t[:-k])[:, None]
    return d * math.factorial(order)


def assert_within_caps(t: np.ndarray, q: np.ndarray, caps: JointReferenceConfig = CAPS) -> None:
    for order, cap, name in ((1, caps.max_speed_rad_s, "speed"), (2, caps.max_accel_rad_s2, "acceleration"),
                             (3, caps.max_jerk_rad_s3, "jerk")):
        if len(q) > order:
            worst = float(np.max(np.abs(derivatives(t, q, order))))
            assert worst <= cap * (1 + REL), f"{name} {worst} above the cap {cap}"


# -- table tests: each against the closed-form kinematics of the caps ------------


def test_start_from_rest_is_a_jerk_ramp():
    ref = make(1)
    q = step(ref, [1.0])
    # first tick at full jerk: q = j t^3 / 6, v = j t^2 / 2, a = j t
    j = CAPS.max_jerk_rad_s3
    assert q[0] == pytest.approx(j * DT**3 / 6, rel=1e-9)
    assert ref.dq[0] == pytest.approx(j * DT**2 / 2, rel=1e-9)
    assert ref.ddq[0] == pytest.approx(j * DT, rel=1e-9)


def test_a_long_move_cruises_at_the_speed_cap_and_stops_exactly_at_the_goal():
    ref = make(1)
    qs, speeds = [ref.q], []
    for _ in range(200):
        qs.append(step(ref, [1.0]))
        speeds.append(ref.dq[0])
    assert max(speeds) == pytest.approx(CAPS.max_speed_rad_s, rel=1e-9)
    assert ref.q[0] == 1.0 and ref.dq[0] == 0.0 and ref.ddq[0] == 0.0
    q = np.array(qs)
    assert np.all(np.diff(q[:, 0]) >= 0.0)  # never passes the goal and comes back
    assert_within_caps(np.arange(len(q)) * DT, q)
    # the time-optimal duration: speeding up and braking take ramp = v/a + a/j
    # each and cover v * ramp together; the rest is cruise at v
    v, a, j = CAPS.max_speed_rad_s, CAPS.max_accel_rad_s2, CAPS.max_jerk_rad_s3
    ramp = v / a + a / j
    duration = 2 * ramp + (1.0 - v * ramp) / v
    arrived = int(np.argmax(q[:, 0] == 1.0))
    assert (arrived - 1) * DT < duration <= arrived * DT


def test_stopping_time_is_the_braking_time_from_full_speed():
    v, a, j = CAPS.max_speed_rad_s, CAPS.max_accel_rad_s2, CAPS.max_jerk_rad_s3
    assert CAPS.stopping_time_s() == pytest.approx(v / a + a / j)  # jerk in, constant braking, jerk out
    slow = JointReferenceConfig(0.1, 40.0, 2000.0)  # never reaches the acceleration cap
    assert slow.stopping_time_s() == pytest.approx(2 * math.sqrt(0.1 / 2000.0))
    # cruising at full speed, a goal one braking distance ahead is met exactly
    ref = make(1)
    for _ in range(100):
        step(ref, [10.0])
    assert ref.dq[0] == pytest.approx(v)
    here = ref.q[0]
    braking = v * CAPS.stopping_time_s() / 2
    ticks = 0
    while ref.dq[0] != 0.0 and ticks < 100:
        step(ref, [here + braking])
        ticks += 1
    assert ref.q[0] == pytest.approx(here + braking, abs=1e-12)
    assert ref.counts["brake"] == ref.counts["keep"] == 0  # every goal was followed
    assert (ticks - 1) * DT < CAPS.stopping_time_s() <= ticks * DT


def test_a_goal_inside_the_braking_distance_brakes_at_once_and_never_passes_it():
    ref = make(1)
    for _ in range(100):
        step(ref, [10.0])
    here = ref.q[0]
    qs = [ref.q]
    for _ in range(30):  # the new goal is right here: the arm cannot stop in time
        qs.append(step(ref, [here]))
    q = np.array(qs)[:, 0]
    assert ref.counts["brake"] > 0 and ref.counts["keep"] == 0
    # it stopped one full-speed braking distance on, the shortest the caps allow
    braking = CAPS.max_speed_rad_s * CAPS.stopping_time_s() / 2
    assert q.max() == pytest.approx(here + braking, abs=1e-9)
    assert_within_caps(np.arange(len(q)) * DT, np.array(qs))
    assert ref.q[0] == pytest.approx(here, abs=1e-12)  # then it came back to the new goal


def test_braking_never_passes_the_current_goal():
    ref = make(1)
    for _ in range(60):
        step(ref, [0.5])  # close to its goal and braking towards it
        if ref.ddq[0] < 0:
            break
    goal = ref.goal[0]
    qs = [ref.q]
    for _ in range(40):
        qs.append(step(ref, [ref.q[0] - 0.2]))  # reverse now
    assert max(q[0] for q in qs) <= goal + 1e-12
    assert_within_caps(np.arange(len(qs)) * DT, np.array(qs))


def test_reversal_brakes_and_returns_within_the_caps():
    ref = make(2)
    qs = [ref.q]
    for k in range(200):
        goal = [1.0, -0.5] if k < 40 else [-1.0, 0.5]
        qs.append(step(ref, goal))
    q = np.array(qs)
    assert_within_caps(np.arange(len(q)) * DT, q)
    np.testing.assert_allclose(ref.q, [-1.0, 0.5], atol=1e-12)


def test_hold_follows_the_plan_to_its_goal():
    ref = make(1)
    for _ in range(20):
        step(ref, [1.0])
    goal = ref.goal[0]
    qs = [ref.q]
    for _ in range(100):
        ref.hold(DT)
        qs.append(ref.q)
    assert ref.q[0] == goal and ref.dq[0] == 0.0
    assert_within_caps(np.arange(len(qs)) * DT, np.array(qs))
    ref.hold(DT)
    assert ref.q[0] == goal  # at rest it stays


def test_groups_are_planned_independently():
    ref = make(2, groups=[[0], [1]])
    for _ in range(100):
        step(ref, [10.0, 10.0])
    # group 0 is asked to stop at once (it brakes), group 1 to go further (it follows)
    q = ref.propose([ref.q[0], ref.q[1] + 1.0], DT)
    assert ref.pending_modes == ["brake", "goal"]
    ref.commit(q, DT)
    assert ref.counts["brake"] == 1


def test_a_group_can_be_told_to_keep_its_plan():
    ref = make(2, groups=[[0], [1]])
    q = ref.propose([0.5, 0.5], DT, modes=["goal", "keep"])
    assert q[0] > 0.0 and q[1] == 0.0 and ref.pending_modes == ["goal", "keep"]
    with pytest.raises(JointReferenceError, match="modes"):
        ref.propose([0.5, 0.5], DT, modes=["goal", "stop"])


def test_pending_path_runs_from_the_next_sample_to_the_stop():
    ref = make(2)
    for _ in range(10):
        step(ref, [0.5, 0.2])
    q = ref.propose([0.5, 0.2], DT)
    path = ref.pending_path(DT)
    np.testing.assert_array_equal(path[0], q)
    np.testing.assert_allclose(path[-1], [0.5, 0.2], atol=1e-12)
    assert np.max(np.abs(np.diff(path, axis=0))) <= CAPS.max_speed_rad_s * DT * (1 + 1e-9)


def test_pending_points_lie_on_the_path_between_its_samples():
    ref = make(2)
    for _ in range(5):
        step(ref, [0.5, 0.2])
    ref.propose([0.5, 0.2], DT)
    path = ref.pending_path(DT)
    points = ref.pending_points(np.arange(len(path) * 4) * DT / 4)
    np.testing.assert_array_equal(points[::4], path)
    between = points[1::4][: len(path) - 1]
    lo, hi = np.minimum(path[:-1], path[1:]), np.maximum(path[:-1], path[1:])
    assert np.all((between >= lo - 1e-12) & (between <= hi + 1e-12))  # moving towards the goal: monotone here
    assert not np.array_equal(between, path[:-1])
    np.testing.assert_array_equal(ref.pending_points([1e3])[0], ref.pending_stop())


def test_reset_joints_stops_whole_groups_only():
    ref = make(4, groups=[[0, 1], [2, 3]])
    for _ in range(10):
        step(ref, [1.0, 1.0, 1.0, 1.0])
    moving = ref.dq
    ref.reset_joints([0, 1], [0.3, 0.3, 9.0, 9.0])
    np.testing.assert_array_equal(ref.q[:2], [0.3, 0.3])
    np.testing.assert_array_equal(ref.dq[:2], 0.0)
    np.testing.assert_array_equal(ref.dq[2:], moving[2:])  # the other group keeps its plan
    with pytest.raises(JointReferenceError, match="whole groups"):
        ref.reset_joints([0], np.zeros(4))


def test_goals_outside_the_range_stop_one_ulp_inside():
    ref = make(1, lower=-1.0, upper=1.0)
    for _ in range(300):
        step(ref, [5.0])
    assert ref.q[0] == np.nextafter(1.0, -np.inf)
    ref.reset([-7.0])
    assert ref.q[0] == np.nextafter(-1.0, np.inf)


def test_commit_takes_only_the_proposal():
    ref = make(1)
    with pytest.raises(JointReferenceError, match="without a proposal"):
        ref.commit([0.0], DT)
    q = ref.propose([1.0], DT)
    with pytest.raises(JointReferenceError, match="proposed configuration"):
        ref.commit(q * 0.5, DT)


def test_non_finite_proposal_and_bad_dt_are_refused():
    ref = make()
    with pytest.raises(JointReferenceError, match="finite"):
        ref.propose([np.nan, 0.0, 0.0], DT)
    with pytest.raises(JointReferenceError, match="dt"):
        ref.propose([0.0, 0.0, 0.0], 0.0)
    with pytest.raises(JointReferenceError, match="dt"):
        ref.hold(-1.0)


def test_use_before_reset_is_refused():
    ref = JointReference(["a"], [-1.0], [1.0], CAPS)
    with pytest.raises(JointReferenceError, match="reset"):
        ref.propose([0.1], DT)


def test_groups_must_split_the_joints():
    with pytest.raises(JointReferenceError, match="groups"):
        JointReference(["a", "b"], [-1, -1], [1, 1], CAPS, groups=[[0], [0]])


def test_config_requires_positive_finite_caps():
    with pytest.raises(JointReferenceError):
        JointReferenceConfig.from_mapping({"max_speed_rad_s": 0.0, "max_accel_rad_s2": 1.0, "max_jerk_rad_s3": 1.0})
    with pytest.raises(JointReferenceError, match="finite"):
        JointReferenceConfig.from_mapping({"max_speed_rad_s": 1.0, "max_accel_rad_s2": 1.0, "max_jerk_rad_s3": np.inf})
    with pytest.raises(JointReferenceError, match="max_jerk_rad_s3"):
        JointReferenceConfig.from_mapping({"max_speed_rad_s": 1.0, "max_accel_rad_s2": 1.0})


# -- property: any stream of goals, holds and tick lengths stays within the caps --

_goal = st.lists(st.floats(-2.5, 2.5, allow_nan=False), min_size=4, max_size=4)
_event = st.one_of(
    st.tuples(st.just("goal"), _goal, st.floats(0.0025, 0.02)),  # a jump anywhere
    st.tuples(st.just("hold"), st.just([0.0] * 4), st.floats(0.0025, 0.02)),
    st.tuples(st.just("reverse"), st.just([0.0] * 4), st.floats(0.0025, 0.02)),  # back to where it came from
    st.tuples(st.just("here"), st.just([0.0] * 4), st.floats(0.0025, 0.02)),  # stop right now
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(_event, st.integers(1, 25)), min_size=1, max_size=12), st.booleans())
def test_caps_hold_at_every_tick_for_any_goal_stream(stream, two_groups):
    ref = make(4, groups=[[0, 1], [2, 3]] if two_groups else None)
    t, times, qs = 0.0, [0.0], [ref.q]
    start = ref.q
    for (kind, goal, dt), repeat in stream:
        if kind == "reverse":
            goal = start
        elif kind == "here":
            goal = ref.q
        start = ref.q
        for _ in range(repeat):
            if kind == "hold":
                ref.hold(dt)
            else:
                step(ref, goal, dt)
            t += dt
            times.append(t)
            qs.append(ref.q)
            assert np.all(ref.q > -3.0) and np.all(ref.q < 3.0)
    assert_within_caps(np.array(times), np.array(qs))
