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
:func:`renderer_config_from_dict`; ``teledora.models`` reads the file.
:class:`FrameSchedule` decides when each camera renders at its own rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from teledora.operators.errors import ConfigError
from teledora.operators.config import config_from_mapping, key_field

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
    """How one robot camera is rendered and published (an entry of ``cameras``,
    over ``camera_defaults``)."""

    name: str = key_field()
    enabled: bool
    width: int
    height: int
    rate_hz: float
    fovy_deg: float
    distortion: tuple[float, ...]
    roll_deg: float

    def __post_init__(self) -> None:
        if self.width <= 0 or self.height <= 0:
            raise CameraConfigError(f"width and height must be positive pixels, got {self.width}x{self.height}")
        if not 0.0 < self.fovy_deg < 180.0:
            raise CameraConfigError(f"fovy_deg must be in (0, 180), got {self.fovy_deg}")
        if not self.rate_hz > 0:
            raise CameraConfigError(f"rate_hz must be a positive number, got {self.rate_hz}")
        _distortion(self.distortion, "distortion")

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
    base_yaw_offset_rad: float


@dataclass(frozen=True)
class RendererConfig:
    """Everything in renderer.yaml, checked."""

    window_rate_hz: float
    viewer: str
    shadows: bool
    multisamples: int
    near_clip_m: float
    max_renders_per_cycle: int
    sources: dict[str, str]
    model: ModelBinding
    cameras: dict[str, CameraSettings]

    def __post_init__(self) -> None:
        if self.viewer not in _VIEWER_MODES:
            raise CameraConfigError(f"viewer must be one of {_VIEWER_MODES}, got {self.viewer!r}")
        for group, src in self.sources.items():
            if group not in _SOURCES:
                raise CameraConfigError(f"sources: unknown joint group {group!r}; known {sorted(_SOURCES)}")
            if src not in _SOURCES[group]:
                raise CameraConfigError(f"sources.{group}: must be one of {_SOURCES[group]}, got {src!r}")
        if set(self.sources) != set(_SOURCES):
            raise CameraConfigError(f"sources: name a source for each of {sorted(_SOURCES)}")
        if not self.window_rate_hz > 0 or not self.near_clip_m > 0:
            raise CameraConfigError("window_rate_hz and near_clip_m must be positive")
        if self.multisamples < 0:
            raise CameraConfigError(f"multisamples must be >= 0, got {self.multisamples}")
        if self.max_renders_per_cycle < 1:
            raise CameraConfigError(f"max_renders_per_cycle must be >= 1, got {self.max_renders_per_cycle}")

    @property
    def enabled_cameras(self) -> list[CameraSettings]:
        return [c for c in self.cameras.values() if c.enabled]


def _distortion(value: Any, where: str) -> tuple[float, ...]:
    try:
        d = tuple(float(c) for c in value)
    except (TypeError, ValueError):
        raise CameraConfigError(f"{where}: expected {_N_DISTORTION} numbers (k1, k2, p1, p2, k3)") from None
    if len(d) != _N_DISTORTION or not all(math.isfinite(c) for c in d):
        raise CameraConfigError(f"{where}: expected {_N_DISTORTION} finite numbers (k1, k2, p1, p2, k3), got {value!r}")
    return d


def renderer_config_from_dict(data: Mapping[str, Any]) -> RendererConfig:
    """Builds a :class:`RendererConfig` from renderer.yaml's mapping: each camera's
    keys over ``camera_defaults``, then every value checked.

    Raises:
        CameraConfigError: a missing, unknown or out-of-range setting.
    """
    data = dict(data)
    defaults = data.pop("camera_defaults", None) or {}
    cameras = data.get("cameras")
    if isinstance(cameras, Mapping):
        data["cameras"] = {name: {**defaults, **(cam or {})} for name, cam in cameras.items()}
    return config_from_mapping(RendererConfig, data, error=CameraConfigError)


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
