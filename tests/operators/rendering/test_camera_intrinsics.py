"""Camera intrinsics from MuJoCo's vertical field of view, distortion maps and
the renderer config."""

from __future__ import annotations

import math

import numpy as np
import pytest

from teledora import models
from teledora.operators.rendering.camera_intrinsics import (
    CameraConfigError,
    CameraSettings,
    FrameSchedule,
    distortion_maps,
    intrinsics_from_fovy,
    renderer_config_from_dict,
)


def test_focal_length_matches_vertical_fov():
    intr = intrinsics_from_fovy(640, 480, 65.0)
    assert intr.fy == pytest.approx(240.0 / math.tan(math.radians(32.5)))
    assert intr.fx == intr.fy
    assert (intr.cx, intr.cy) == (319.5, 239.5)
    # a point on the top edge of the vertical fov projects to the top image edge
    u, v = intr.project(np.array([0.0, -math.tan(math.radians(32.5)), 1.0]))
    assert v == pytest.approx(intr.cy - 240.0)
    assert not intr.distorted


@pytest.mark.parametrize("w, h, fovy", [(0, 480, 65), (640, -1, 65), (640, 480, 0), (640, 480, 180)])
def test_bad_camera_geometry_is_refused(w, h, fovy):
    with pytest.raises(CameraConfigError):
        intrinsics_from_fovy(w, h, fovy)


def test_zero_distortion_maps_are_identity():
    mx, my = distortion_maps(intrinsics_from_fovy(32, 24, 65.0))
    u, v = np.meshgrid(np.arange(32), np.arange(24))
    assert np.allclose(mx, u, atol=1e-4) and np.allclose(my, v, atol=1e-4)


def test_barrel_distortion_maps_invert_the_distortion_model():
    intr = intrinsics_from_fovy(64, 48, 65.0, (-0.2, 0.05, 0.001, -0.002, 0.0))
    mx, my = distortion_maps(intr)
    # re-distort the ideal point a corner pixel samples: it must land on that pixel
    x = (mx[0, 0] - intr.cx) / intr.fx
    y = (my[0, 0] - intr.cy) / intr.fy
    k1, k2, p1, p2, k3 = intr.distortion
    r2 = x * x + y * y
    rad = 1 + k1 * r2 + k2 * r2 * r2 + k3 * r2**3
    xd = x * rad + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * rad + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    assert xd * intr.fx + intr.cx == pytest.approx(0.0, abs=1e-3)
    assert yd * intr.fy + intr.cy == pytest.approx(0.0, abs=1e-3)
    # barrel (k1 < 0): the corner of the output sees further out than the ideal corner
    assert mx[0, 0] < 0 and my[0, 0] < 0


def test_shipped_renderer_config_loads_with_all_five_cameras():
    cfg = renderer_config_from_dict(models.load_yaml("alohamini2/renderer.yaml"))
    assert sorted(cfg.cameras) == sorted(["chest", "top_front", "top_back", "left_wrist", "right_wrist"])
    assert all(c.width == 640 and c.height == 480 and c.fovy_deg == 65.0 for c in cfg.cameras.values())
    assert cfg.window_rate_hz == 60.0
    assert 0 < len(cfg.enabled_cameras) <= 5


@pytest.mark.parametrize(
    "data, match",
    [
        ({"viewer": "maybe"}, "viewer"),
        ({"sources": {"arms": "odom"}}, "sources.arms"),
        ({"sources": {"wheels": "odom"}}, "unknown joint group"),
        ({"cameras": {"chest": {"rate_hz": 0}}}, "rate_hz"),
        ({"cameras": {"chest": {"distortion": [0.1, 0.2]}}}, "distortion"),
        ({"cameras": {"chest": {"exposure": 3}}}, "unknown keys"),
        ({"cameras": {"chest": {"width": 640.5}}}, "cameras.chest.width: expected a whole number"),
        ({"camera_defaults": {"fovy_deg": 180.0}}, "fovy_deg must be in"),
        ({"sources": {"arms": None}}, "sources.arms"),
        ({"model": {"base_joints": ["x", "y"]}}, "base_joints"),
    ],
)
def test_bad_config_is_refused_with_a_reason(data, match):
    with pytest.raises(CameraConfigError, match=match):
        renderer_config_from_dict(_shipped_with(data))


def _shipped_with(change: dict, base: dict | None = None) -> dict:
    """The shipped renderer.yaml with ``change`` merged in, nested mappings key by key."""
    out = dict(models.load_yaml("alohamini2/renderer.yaml") if base is None else base)
    for key, value in change.items():
        out[key] = _shipped_with(value, out.get(key) or {}) if isinstance(value, dict) else value
    return out


def test_camera_defaults_fill_in_missing_keys():
    cfg = renderer_config_from_dict(
        _shipped_with({"camera_defaults": {"width": 160, "height": 120}, "cameras": {"chest": {"rate_hz": 2}}})
    )
    chest = cfg.cameras["chest"]
    assert (chest.width, chest.height, chest.rate_hz, chest.period_ns) == (160, 120, 2.0, 500_000_000)


def test_a_late_camera_renders_once_and_counts_the_frames_it_missed():
    cam = CameraSettings("chest", True, 64, 48, 10.0, 65.0, (0.0,) * 5, 0.0)
    fast = CameraSettings("left_wrist", True, 64, 48, 20.0, 65.0, (0.0,) * 5, 0.0)
    schedule = FrameSchedule([cam, fast], start_ns=0)
    assert schedule.due(0) == ["chest", "left_wrist"] or schedule.due(0) == ["left_wrist", "chest"]
    schedule.rendered("chest", 0)
    schedule.rendered("left_wrist", 0)
    assert schedule.due(50_000_000) == ["left_wrist"]
    # 0.35 s later: chest is 2.5 periods late, left_wrist 6 periods late -> most overdue first
    assert schedule.due(350_000_000) == ["left_wrist", "chest"]
    schedule.rendered("chest", 350_000_000)
    assert schedule.dropped["chest"] == 2  # frames at 0.1 and 0.2 s were skipped, not queued
    assert schedule.next_due["chest"] == 400_000_000
    assert "chest" not in schedule.due(399_000_000)
