"""Renderer options: when a viewer window opens and which cameras render."""

from __future__ import annotations

import dataclasses

import pytest

from teledora import models
from teledora.operators.rendering.camera_intrinsics import renderer_config_from_dict
from teledora.operators.rendering.renderer_options import chosen_cameras, wants_window

CONFIG = renderer_config_from_dict(models.load_yaml("alohamini2/renderer.yaml"))


def test_window_mode_follows_the_display():
    assert wants_window("auto", {"DISPLAY": ":0"})
    assert wants_window("auto", {"WAYLAND_DISPLAY": "wayland-0"})
    assert not wants_window("auto", {})
    assert not wants_window("auto", {"DISPLAY": ""})
    assert not wants_window("off", {"DISPLAY": ":0"})
    assert wants_window("on", {})


def test_without_a_list_the_enabled_cameras_render():
    cams = dict(CONFIG.cameras)
    cams["chest"] = dataclasses.replace(cams["chest"], enabled=False)
    cams["top_back"] = dataclasses.replace(cams["top_back"], enabled=True)
    config = dataclasses.replace(CONFIG, cameras=cams)
    chosen = [c.name for c in chosen_cameras(config, None)]
    assert "chest" not in chosen and "top_back" in chosen
    assert chosen == [n for n, c in cams.items() if c.enabled]


def test_a_list_picks_cameras_in_its_order_even_disabled_ones():
    cams = {**CONFIG.cameras, "right_wrist": dataclasses.replace(CONFIG.cameras["right_wrist"], enabled=False)}
    config = dataclasses.replace(CONFIG, cameras=cams)
    chosen = chosen_cameras(config, " right_wrist, chest ,,")
    assert [c.name for c in chosen] == ["right_wrist", "chest"]
    assert chosen[0] is cams["right_wrist"]


def test_an_unknown_camera_in_the_list_is_refused():
    with pytest.raises(ValueError, match=r"unknown cameras \['nose'\]"):
        chosen_cameras(CONFIG, "chest,nose")
