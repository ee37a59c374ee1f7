"""Relative controller -> gripper mapping."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.teleop.anchored_mapping import AnchoredMapping, CatchUp, MappingScaleError
from teledora.operators.geometry import Pose, quat_angle, quat_from_rotvec

C0 = Pose.of([1.0, 2.0, 1.2], quat_from_rotvec([0.1, -0.2, 0.3]))
R0 = Pose.of([0.35, 0.18, 0.75], quat_from_rotvec([0.0, 1.2, 0.0]))


def test_anchor_maps_to_robot_pose():
    m = AnchoredMapping(C0, R0)
    t = m.target(C0)
    np.testing.assert_allclose(t.position, R0.position)
    assert quat_angle(t.orientation, R0.orientation) < 1e-9


@pytest.mark.parametrize("scale", [1.0, 0.1])
def test_displacement_is_scaled(scale):
    m = AnchoredMapping(C0, R0, scale)
    c = Pose(C0.position + [0.2, -0.1, 0.05], C0.orientation)
    np.testing.assert_allclose(m.target(c).position, R0.position + scale * np.array([0.2, -0.1, 0.05]))


def test_rescaled_continues_without_jump():
    m = AnchoredMapping(C0, R0)
    c = Pose(C0.position + [0.1, 0, 0], quat_from_rotvec([0.0, 0.0, 0.5]))
    before = m.target(c)
    slow = m.rescaled(c, 0.1)
    after = slow.target(c)
    np.testing.assert_allclose(after.position, before.position)
    assert quat_angle(after.orientation, before.orientation) < 1e-9
    moved = slow.target(Pose(c.position + [0.1, 0, 0], c.orientation))
    np.testing.assert_allclose(moved.position, before.position + [0.01, 0, 0])


@pytest.mark.parametrize("scale", [0.0, -1.0, float("inf")])
def test_bad_scale(scale):
    with pytest.raises(MappingScaleError):
        AnchoredMapping(C0, R0, scale)


MS = 1_000_000
START = Pose.of([0.30, 0.10, 0.70], quat_from_rotvec([0.0, 0.0, 0.4]))  # where the arm is
GOAL = Pose.of([0.36, 0.18, 0.75], quat_from_rotvec([0.1, 0.0, -0.2]))  # where the mapping puts the hand


def test_a_catch_up_publishes_its_start_at_once():
    pose, left = CatchUp.between(START, GOAL, 0).advance(GOAL, 0, 0.2, 1.0)
    np.testing.assert_allclose(pose.position, START.position, atol=1e-12)
    assert quat_angle(pose.orientation, START.orientation) < 1e-9 and left is not None


@pytest.mark.parametrize("speed_m_s, rate_rad_s", [(0.2, 1.0), (0.05, 3.0), (1.0, 0.1)])
def test_a_catch_up_closes_at_most_its_speeds_and_then_ends(speed_m_s, rate_rad_s):
    gap_m = float(np.linalg.norm(START.position - GOAL.position))
    gap_rad = quat_angle(START.orientation, GOAL.orientation)
    c: CatchUp | None = CatchUp.between(START, GOAL, 0)
    k = 0
    while c is not None:
        k += 1
        pose, c = c.advance(GOAL, 10 * MS * k, speed_m_s, rate_rad_s)
        s = 0.010 * k
        assert np.linalg.norm(pose.position - GOAL.position) == pytest.approx(max(0.0, gap_m - speed_m_s * s), abs=1e-12)
        assert quat_angle(pose.orientation, GOAL.orientation) == pytest.approx(max(0.0, gap_rad - rate_rad_s * s), abs=1e-9)
    assert k == int(np.ceil(max(gap_m / speed_m_s, gap_rad / rate_rad_s) / 0.010 - 1e-9))
    np.testing.assert_allclose(pose.position, GOAL.position)


def test_a_catch_up_rides_on_the_mappings_motion():
    # the mapping's target moves 1 cm; the published target moves that, plus the catch-up's share
    c = CatchUp.between(START, GOAL, 0)
    moved = Pose(GOAL.position + [0.0, 0.0, 0.01], GOAL.orientation)
    first, c = c.advance(GOAL, 0, 0.2, 1.0)
    second, _ = c.advance(moved, 10 * MS, 0.2, 1.0)
    step = second.position - first.position - [0.0, 0.0, 0.01]
    assert np.linalg.norm(step) == pytest.approx(0.2 * 0.010, abs=1e-12)
