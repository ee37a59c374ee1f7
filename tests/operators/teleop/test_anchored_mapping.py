"""Relative controller -> gripper mapping."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.teleop.anchored_mapping import AnchoredMapping, MappingScaleError
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
