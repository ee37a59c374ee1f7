"""Pinhole intrinsics of the rendered robot cameras and their per-camera settings.

MuJoCo renders an ideal pinhole camera with square pixels whose optical axis
passes through the image centre; its only optical parameter is the vertical
field of view. From that and the image size follow the focal lengths in pixels
(``fy = (h / 2) / tan(fovy / 2)``, ``fx = fy``) and the principal point, given
here in the OpenCV convention where pixel centres sit on integer coordinates
(``cx = (w - 1) / 2``).

A camera may also be given Brown-Conrady (OpenCV "plumb_bob") distortion
coefficients ``(k1, k2, p1, p2, k3)``. The renderer then warps the ideal image
with :func:`distortion_maps` so that the published pixels match the published
intrinsics. All zero (the default) means no distortion and no warp.

The renderer's YAML (``models/alohamini2/renderer.yaml``) is interpreted by
:func:`renderer_config_from_dict`; reading the file is the node's business.
:class:`FrameSchedule` decides when each camera renders at its own rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from teledora.operators.errors import ConfigError

CAMERA_NAMES: tuple[str, ...] = ("chest", "top_front", "top_back", "left_wrist", "right_wrist")
DISTORTION_MODEL = "plumb_bob"
_N_DISTORTION = 5
_SOURCES = {"arms": ("joint_states", "ground_truth"), "lift": ("lift", "ground_truth"), "base": ("odom", "ground_truth")}
_VIEWER_MODES = ("auto", "on", "off")


class CameraConfigError(ConfigError):
    """A camera or renderer setting is missing, of the wrong type or out of range."""


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole intrinsics in pixels plus plumb_bob distortion (k1, k2, p1, p2, k3)."""

    width: int
    height: int
    fx: float
    fy: float
    cx: float
    cy: float
    distortion: tuple[float, ...] = (0.0,) * _N_DISTORTION

    @property
    def matrix(self) -> np.ndarray:
        """The 3x3 camera matrix K."""
        return np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])

    @property
    def distorted(self) -> bool:
        return any(c != 0.0 for c in self.distortion)

    def project(self, point_cam: np.ndarray) -> np.ndarray:
        """Pixel (u, v) of a point in the optical frame (+z forward, +x right, +y down),
        without distortion."""
        x, y, z = np.asarray(point_cam, dtype=float)
        if z <= 0:
            raise CameraConfigError(f"point {point_cam} is behind the camera")
        return np.array([self.fx * x / z + self.cx, self.fy * y / z + self.cy])


def intrinsics_from_fovy(
    width: int, height: int, fovy_deg: float, distortion: tuple[float, ...] | None = None
) -> CameraIntrinsics:
    """Intrinsics of a MuJoCo camera rendered at ``width`` x ``height``.

    Raises:
        CameraConfigError: non-positive size or a field of view outside (0, 180).
    """
    if width <= 0 or height <= 0:
        raise CameraConfigError(f"image size must be positive, got {width}x{height}")
    if not 0.0 < fovy_deg < 180.0:
        raise CameraConfigError(f"fovy_deg must be in (0, 180), got {fovy_deg}")
    fy = (height / 2.0) / math.tan(math.radians(fovy_deg) / 2.0)
    dist = _distortion(distortion if distortion is not None else (0.0,) * _N_DISTORTION, "distortion")
    return CameraIntrinsics(width, height, fy, fy, (width - 1) / 2.0, (height - 1) / 2.0, dist)


def _distort_normalised(x: np.ndarray, y: np.ndarray, d: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    k1, k2, p1, p2, k3 = d
    r2 = x * x + y * y
    radial = 1.0 + r2 * (k1 + r2 * (k2 + r2 * k3))
    xd = x * radial + 2.0 * p1 * x * y + p2 * (r2 + 2.0 * x * x)
    yd = y * radial + p1 * (r2 + 2.0 * y * y) + 2.0 * p2 * x * y
    return xd, yd


def distortion_maps(intr: CameraIntrinsics, iterations: int = 20) -> tuple[np.ndarray, np.ndarray]:
    """``cv2.remap`` maps that turn the ideal (pinhole) render into the distorted image.

    For every output pixel (a distorted observation) it finds the undistorted
    normalised point by fixed-point iteration and returns where that point lies
    in the ideal image. Returns float32 (map_x, map_y) of shape (height, width).
    """
    u, v = np.meshgrid(np.arange(intr.width, dtype=float), np.arange(intr.height, dtype=float))
    xd = (u - intr.cx) / intr.fx
    yd = (v - intr.cy) / intr.fy
    x, y = xd.copy(), yd.copy()
    for _ in range(iterations):
        fx_, fy_ = _distort_normalised(x, y, intr.distortion)
        x, y = x - (fx_ - xd), y - (fy_ - yd)
    return (x * intr.fx + intr.cx).astype(np.float32), (y * intr.fy + intr.cy).astype(np.float32)


@dataclass(frozen=True)
class CameraSettings:
    """How one robot camera is rendered and published."""

    name: str
    enabled: bool
    width: int
    height: int
    rate_hz: float
    fovy_deg: float
    distortion: tuple[float, ...]
    roll_deg: float = 0.0

    @property
    def period_ns(self) -> int:
        return int(round(1e9 / self.rate_hz))

    def intrinsics(self) -> CameraIntrinsics:
        return intrinsics_from_fovy(self.width, self.height, self.fovy_deg, self.distortion)


@dataclass(frozen=True)
class ModelBinding:
    """Which model file is rendered and what its base and lift joints are called."""

    path: str
    base_joints: tuple[str, str, str]
    lift_joint: str
    base_yaw_offset_rad: float = 0.0


@dataclass(frozen=True)
class RendererConfig:
    """Everything in renderer.yaml, checked."""

    render_rate_hz: float
    viewer: str
    shadows: bool
    multisamples: int
    near_clip_m: float
    max_renders_per_cycle: int
    sources: dict[str, str]
    model: ModelBinding
    cameras: dict[str, CameraSettings] = field(default_factory=dict)

    @property
    def enabled_cameras(self) -> list[CameraSettings]:
        return [c for c in self.cameras.values() if c.enabled]


def _positive(value: Any, where: str) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise CameraConfigError(f"{where}: expected a number, got {value!r}") from None
    if not math.isfinite(v) or v <= 0:
        raise CameraConfigError(f"{where}: must be a positive number, got {value!r}")
    return v


def _distortion(value: Any, where: str) -> tuple[float, ...]:
    try:
        d = tuple(float(c) for c in value)
    except (TypeError, ValueError):
        raise CameraConfigError(f"{where}: expected {_N_DISTORTION} numbers (k1, k2, p1, p2, k3)") from None
    if len(d) != _N_DISTORTION or not all(math.isfinite(c) for c in d):
        raise CameraConfigError(f"{where}: expected {_N_DISTORTION} finite numbers (k1, k2, p1, p2, k3), got {value!r}")
    return d


def camera_settings_from_dict(name: str, data: Mapping[str, Any], defaults: Mapping[str, Any]) -> CameraSettings:
    """One camera entry; keys it lacks come from ``defaults``."""
    merged = {**defaults, **(data or {})}
    unknown = sorted(set(merged) - {"enabled", "width", "height", "rate_hz", "fovy_deg", "distortion", "roll_deg"})
    if unknown:
        raise CameraConfigError(f"cameras.{name}: unknown keys {unknown}")
    where = f"cameras.{name}"
    width = _positive(merged.get("width", 640), f"{where}.width")
    height = _positive(merged.get("height", 480), f"{where}.height")
    if width != int(width) or height != int(height):
        raise CameraConfigError(f"{where}: width and height must be whole pixels")
    fovy = _positive(merged.get("fovy_deg", 65.0), f"{where}.fovy_deg")
    if fovy >= 180.0:
        raise CameraConfigError(f"{where}.fovy_deg must be below 180, got {fovy}")
    return CameraSettings(
        name=name,
        enabled=bool(merged.get("enabled", True)),
        width=int(width),
        height=int(height),
        rate_hz=_positive(merged.get("rate_hz", 30.0), f"{where}.rate_hz"),
        fovy_deg=fovy,
        distortion=_distortion(merged.get("distortion", [0.0] * _N_DISTORTION), f"{where}.distortion"),
        roll_deg=float(merged.get("roll_deg", 0.0)),
    )


def renderer_config_from_dict(data: Mapping[str, Any]) -> RendererConfig:
    """Builds a :class:`RendererConfig` from renderer.yaml's mapping.

    Raises:
        CameraConfigError: a missing, unknown or out-of-range setting.
    """
    viewer = str(data.get("viewer", "auto"))
    if viewer not in _VIEWER_MODES:
        raise CameraConfigError(f"viewer must be one of {_VIEWER_MODES}, got {viewer!r}")
    sources = {**{k: v[0] for k, v in _SOURCES.items()}, **(data.get("sources") or {})}
    for group, src in sources.items():
        if group not in _SOURCES:
            raise CameraConfigError(f"sources: unknown joint group {group!r}; known {sorted(_SOURCES)}")
        if src not in _SOURCES[group]:
            raise CameraConfigError(f"sources.{group}: must be one of {_SOURCES[group]}, got {src!r}")
    m = data.get("model") or {}
    base = tuple(m.get("base_joints", ("base_x", "base_y", "base_yaw")))
    if len(base) != 3:
        raise CameraConfigError(f"model.base_joints: expected [x, y, yaw] joint names, got {list(base)}")
    model = ModelBinding(
        path=str(m.get("path", "alohamini2/scene.xml")),
        base_joints=base,  # type: ignore[arg-type]
        lift_joint=str(m.get("lift_joint", "vertical_move")),
        base_yaw_offset_rad=float(m.get("base_yaw_offset_rad", 0.0)),
    )
    defaults = data.get("camera_defaults") or {}
    cams_data = data.get("cameras") or {}
    cameras = {name: camera_settings_from_dict(name, cams_data[name], defaults) for name in cams_data}
    multisamples = int(data.get("multisamples", 0))
    if multisamples < 0:
        raise CameraConfigError(f"multisamples must be >= 0, got {multisamples}")
    max_renders = int(data.get("max_renders_per_cycle", 1))
    if max_renders < 1:
        raise CameraConfigError(f"max_renders_per_cycle must be >= 1, got {max_renders}")
    return RendererConfig(
        render_rate_hz=_positive(data.get("render_rate_hz", 60.0), "render_rate_hz"),
        viewer=viewer,
        shadows=bool(data.get("shadows", False)),
        near_clip_m=_positive(data.get("near_clip_m", 0.01), "near_clip_m"),
        multisamples=multisamples,
        max_renders_per_cycle=max_renders,
        sources=sources,
        model=model,
        cameras=cameras,
    )


class FrameSchedule:
    """When each camera renders next. A late camera renders once and skips the
    frames it missed (counted as dropped); frames are never queued."""

    def __init__(self, cameras: Sequence[CameraSettings], start_ns: int) -> None:
        self.period = {c.name: c.period_ns for c in cameras}
        self.next_due = {c.name: start_ns for c in cameras}
        self.dropped = dict.fromkeys(self.period, 0)

    def due(self, now_ns: int) -> list[str]:
        """Cameras due now, most overdue (relative to its period) first."""
        late = [(now_ns - t) / self.period[n] for n, t in self.next_due.items() if now_ns >= t]
        names = [n for n, t in self.next_due.items() if now_ns >= t]
        return [n for _, n in sorted(zip(late, names), key=lambda p: -p[0])]

    def rendered(self, name: str, now_ns: int) -> None:
        period = self.period[name]
        missed = (now_ns - self.next_due[name]) // period
        self.dropped[name] += int(missed)
        self.next_due[name] += (missed + 1) * period
