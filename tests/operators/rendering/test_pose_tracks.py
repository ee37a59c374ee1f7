"""Poses between recorded samples: joints linear, the base yaw unwrapped,
objects slerped, nothing before the first sample, the last held after it."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.rendering.pose_tracks import PoseTracks, interpolate_linear, slerp

T0 = 1_800_000_000_000_000_000  # absolute ns, as recorded: too large for a double's 53 bits


def _zrot(angle: float) -> list[float]:
    """(w, x, y, z) of a turn about z."""
    return [math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2)]


def _angle_between(a: np.ndarray, b: np.ndarray) -> float:
    return 2 * math.acos(min(1.0, abs(float(np.dot(a, b)))))


def _objects(stamp: int, pos: list[float], quat_wxyz: list[float]) -> dict:
    w, x, y, z = quat_wxyz
    return {"stamp_ns": stamp, "names": ["cube"], "x": [pos[0]], "y": [pos[1]], "z": [pos[2]],
            "qx": [x], "qy": [y], "qz": [z], "qw": [w]}


def test_joints_between_samples_are_linear_at_the_exact_fraction():
    tracks = PoseTracks()
    tracks.add_groups({"arm": {"a": 0.0, "b": 1.0}}, T0)
    tracks.add_groups({"arm": {"a": 1.0, "b": -1.0}}, T0 + 30_000_000)
    at = tracks.joints_at(T0 + 10_000_000)  # one third of the way
    assert abs(at["a"] - 1 / 3) < 1e-12
    assert abs(at["b"] - 1 / 3) < 1e-12


def test_no_pose_before_the_first_sample_and_the_last_holds_after_the_end():
    tracks = PoseTracks()
    tracks.add_groups({"arm": {"a": 2.0}}, T0 + 100)
    tracks.add_groups({"arm": {"a": 3.0}}, T0 + 200)
    assert tracks.joints_at(T0 + 99) == {}
    assert tracks.joints_at(T0 + 100) == {"a": 2.0}
    assert tracks.joints_at(T0 + 10**9) == {"a": 3.0}
    assert tracks.start_ns(["arm"]) == T0 + 100
    assert tracks.end_ns() == T0 + 200
    assert tracks.start_ns(["arm", "lift"]) is None


def test_start_is_when_the_last_group_begins():
    tracks = PoseTracks()
    tracks.add_groups({"arm": {"a": 0.0}}, T0)
    tracks.add_groups({"lift": {"h": 0.0}}, T0 + 500)
    assert tracks.start_ns(["arm", "lift"]) == T0 + 500


def test_a_yaw_through_pi_turns_the_short_way():
    """Odometry reports 3.0 rad then -3.0 rad: the base turned 0.28 rad through
    pi, not 6 rad back through zero, so half way it faces pi."""
    tracks = PoseTracks(wrapping_joints=["base_yaw"])
    tracks.add_groups({"base": {"base_x": 0.0, "base_yaw": 3.0}}, T0)
    tracks.add_groups({"base": {"base_x": 1.0, "base_yaw": -3.0}}, T0 + 1000)
    yaw = tracks.joints_at(T0 + 500)["base_yaw"]
    assert abs(math.remainder(yaw - math.pi, 2 * math.pi)) < 1e-9
    assert tracks.joints_at(T0 + 500)["base_x"] == 0.5


def test_samples_at_one_time_keep_the_later_and_out_of_order_ones_are_sorted():
    tracks = PoseTracks()
    tracks.add_groups({"arm": {"a": 4.0}}, T0 + 200)
    tracks.add_groups({"arm": {"a": 0.0}}, T0)
    tracks.add_groups({"arm": {"a": 1.0}}, T0)
    assert tracks.joints_at(T0) == {"a": 1.0}
    assert tracks.joints_at(T0 + 100) == {"a": 2.5}


def test_an_object_halfway_through_a_quarter_turn_is_turned_an_eighth():
    tracks = PoseTracks()
    tracks.add_objects(_objects(T0, [0.0, 0.0, 0.0], _zrot(0.0)))
    tracks.add_objects(_objects(T0 + 1000, [1.0, 2.0, 0.0], _zrot(math.pi / 2)))
    pos, quat = tracks.objects_at(T0 + 500)["cube"]
    np.testing.assert_allclose(pos, [0.5, 1.0, 0.0])
    np.testing.assert_allclose(quat, _zrot(math.pi / 4), atol=1e-12)
    assert tracks.objects_at(T0 - 1) == {}


def test_an_object_pose_that_is_not_finite_or_has_no_rotation_is_refused():
    tracks = PoseTracks()
    assert tracks.add_objects(_objects(T0, [math.nan, 0.0, 0.0], _zrot(0.0))) == ["cube"]
    assert tracks.add_objects(_objects(T0, [0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0])) == ["cube"]
    assert tracks.objects == []


def test_slerp_takes_the_short_arc_for_a_sign_flipped_quaternion():
    q0 = np.array(_zrot(0.0))
    q1 = -np.array(_zrot(0.4))  # the same rotation as +q1
    mid = slerp(q0, q1, np.array([0.5]))[0]
    assert _angle_between(mid, np.array(_zrot(0.2))) < 1e-9


unit = st.floats(-1.0, 1.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(unit, min_size=4, max_size=4), st.lists(unit, min_size=4, max_size=4), st.floats(0.0, 1.0))
def test_slerp_is_unit_and_turns_by_its_fraction_of_the_angle(a, b, u):
    q0, q1 = np.array(a), np.array(b)
    if np.linalg.norm(q0) < 0.1 or np.linalg.norm(q1) < 0.1:
        return
    q0, q1 = q0 / np.linalg.norm(q0), q1 / np.linalg.norm(q1)
    q = slerp(q0, q1, np.array([u]))[0]
    total = _angle_between(q0, q1)
    assert abs(np.linalg.norm(q) - 1.0) < 1e-9
    assert abs(_angle_between(q0, q) - u * total) < 1e-6
    assert abs(_angle_between(q, q1) - (1 - u) * total) < 1e-6


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 10**8), st.floats(-10, 10)), min_size=1, max_size=30),
       st.lists(st.integers(-10**8, 4 * 10**9), min_size=1, max_size=20))
def test_linear_interpolation_stays_between_its_neighbours_and_hits_samples(steps, queries):
    times = T0 + np.cumsum([s for s, _ in steps]).astype(np.int64)
    values = np.array([v for _, v in steps])
    at = T0 + np.array(queries, dtype=np.int64)
    out = interpolate_linear(times, values, at)[:, 0]
    for t, v in zip(at, out):
        if t < times[0]:
            assert np.isnan(v)
            continue
        i = int(np.searchsorted(times, t, side="right") - 1)
        j = min(i + 1, len(times) - 1)
        lo, hi = sorted((values[i], values[j]))
        assert lo - 1e-9 <= v <= hi + 1e-9
        if t == times[i]:
            assert v == values[i]
    np.testing.assert_array_equal(interpolate_linear(times, values, times)[:, 0], values)
