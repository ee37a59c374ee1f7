"""The renderer's start-up choices resolved against its config and environment:
whether a viewer window opens and which configured cameras render."""

from __future__ import annotations

from typing import Mapping

from teledora.operators.rendering.camera_intrinsics import CameraSettings, RendererConfig


def wants_window(mode: str, env: Mapping[str, str]) -> bool:
    """True when a viewer window should open (``on``, or ``auto`` with a display)."""
    return mode == "on" or (mode == "auto" and bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY")))


def chosen_cameras(config: RendererConfig, names: str | None) -> list[CameraSettings]:
    """The configured cameras to render: the enabled ones, or those of a
    comma-separated list (``--cameras``), in its order; ``none`` renders none.

    Raises:
        ValueError: the list names a camera the config does not have.
    """
    if names is None:
        return config.enabled_cameras
    if names.strip() == "none":
        return []  # the window alone: the cameras node publishes the images
    chosen = [c.strip() for c in names.split(",") if c.strip()]
    unknown = sorted(set(chosen) - set(config.cameras))
    if unknown:
        raise ValueError(f"unknown cameras {unknown}; configured {sorted(config.cameras)}")
    return [config.cameras[c] for c in chosen]
