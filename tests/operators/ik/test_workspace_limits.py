"""Workspace box + reach cylinder projection and Cartesian target speed caps."""

from __future__ import annotations

import numpy as np
import pytest

from teledora import models
from teledora.operators.geometry import quat_angle, quat_slerp
from teledora.operators.ik.workspace_limits import (
    CartesianSpeedLimiter,
    WorkspaceConfig,
    WorkspaceError,
    WorkspaceLimits,
)

CFG = WorkspaceConfig.from_mapping(models.load_yaml("alohamini2/ik.yaml")["workspace"])
IDENTITY = np.array([0.0, 0.0, 0.0, 1.0])


def test_inside_targets_are_not_moved():
    lim = WorkspaceLimits(CFG)
    p = np.array([0.3, 0.2, 0.6])
    out = lim.project("left", p)
    np.testing.assert_array_equal(out.position, p)
    assert out.projection_m == 0.0


def test_box_projection_clamps_each_axis():
    lim = WorkspaceLimits(CFG)
    out = lim.project("left", [0.3, 0.2, -0.5])
    assert out.position[2] == pytest.approx(CFG.box_min_m[2])
    assert out.projection_m == pytest.approx(0.5 + CFG.box_min_m[2])


def test_reach_cylinder_projects_radially_towards_the_shoulder():
    lim = WorkspaceLimits(CFG)
    centre = CFG.shoulder_xy_m["right"]
    far = np.array([centre[0] + 0.5, centre[1] - 0.5, 0.6])
    # choose a point inside the box but outside the cylinder
    far[:2] = np.clip(far[:2], CFG.box_min_m[:2], CFG.box_max_m[:2])
    assert not lim.contains("right", far)
    out = lim.project("right", far)
    assert lim.contains("right", out.position)
    assert np.linalg.norm(out.position[:2] - centre) == pytest.approx(CFG.max_radius_m, abs=1e-6)
    assert out.position[2] == pytest.approx(0.6)


def test_projection_is_the_nearest_feasible_point_on_random_samples():
    lim = WorkspaceLimits(CFG)
    rng = np.random.default_rng(3)
    for _ in range(200):
        p = rng.uniform(-1.5, 1.5, 3) + [0.3, 0, 0.6]
        out = lim.project("left", p)
        assert lim.contains("left", out.position, tol=1e-7)
        # no random feasible point is closer than the projection
        samples = out.position + rng.normal(0, 0.02, (50, 3))
        closer = [s for s in samples if lim.contains("left", s) and np.linalg.norm(s - p) < out.projection_m - 1e-6]
        assert not closer


def test_non_finite_target_is_refused():
    with pytest.raises(WorkspaceError, match="finite"):
        WorkspaceLimits(CFG).project("left", [np.nan, 0, 0])
    with pytest.raises(WorkspaceError, match="side"):
        WorkspaceLimits(CFG).project("middle", [0, 0, 0])


def test_speed_limiter_caps_linear_motion_per_tick():
    lim = CartesianSpeedLimiter(CFG)
    lim.reset([0.3, 0.2, 0.6], IDENTITY)
    out = lim.step([0.3, 0.2, 1.0], IDENTITY, 0.01, slow=False)
    assert out.rate_limited
    assert out.position[2] - 0.6 == pytest.approx(CFG.max_linear_speed_m_s * 0.01)
    slow = lim.step([0.3, 0.2, 1.0], IDENTITY, 0.01, slow=True)
    assert slow.position[2] - out.position[2] == pytest.approx(CFG.max_linear_speed_m_s * CFG.slow_scale * 0.01)


def test_speed_limiter_caps_rotation_and_reaches_the_goal():
    lim = CartesianSpeedLimiter(CFG)
    lim.reset([0.3, 0.2, 0.6], IDENTITY)
    goal = np.array([0.0, 0.0, np.sin(0.5), np.cos(0.5)])  # 1 rad about z
    out = lim.step([0.3, 0.2, 0.6], goal, 0.01, slow=False)
    assert quat_angle(IDENTITY, out.orientation) == pytest.approx(CFG.max_angular_speed_rad_s * 0.01, rel=1e-6)
    for _ in range(200):
        out = lim.step([0.3, 0.2, 0.6], goal, 0.01, slow=False)
    assert not out.rate_limited
    assert quat_angle(goal, out.orientation) < 1e-9


def test_slerp_takes_the_short_arc():
    a = IDENTITY
    b = -np.array([0.0, 0.0, np.sin(0.1), np.cos(0.1)])  # same rotation, other hemisphere
    mid = quat_slerp(a, b, 0.5)
    assert quat_angle(mid, [0, 0, np.sin(0.05), np.cos(0.05)]) < 1e-9
    assert quat_angle(quat_slerp(a, b, 0.0), a) < 1e-12 and quat_angle(quat_slerp(a, b, 1.0), b) < 1e-12


def test_limiter_needs_reset():
    with pytest.raises(WorkspaceError, match="reset"):
        CartesianSpeedLimiter(CFG).step([0, 0, 0], IDENTITY, 0.01, slow=False)


def test_config_rejects_inverted_box():
    data = dict(models.load_yaml("alohamini2/ik.yaml")["workspace"])
    data["box_min_m"], data["box_max_m"] = data["box_max_m"], data["box_min_m"]
    with pytest.raises(WorkspaceError, match="box"):
        WorkspaceConfig.from_mapping(data)
