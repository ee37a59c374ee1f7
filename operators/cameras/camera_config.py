"""cameras.yaml read into checked settings, and the calibration message built from them.

One entry per camera (``chest``, ``top_front``, ``top_back``, ``left_wrist``,
``right_wrist``) over ``camera_defaults``: the capture device (a udev name by
USB port, docs/cameras.md), the requested MJPEG size and rate, the pinhole
intrinsics with plumb_bob distortion, and the mount: the camera's frame in a
parent link of the robot model, as URDF ``xyz`` (m) and fixed-axis ``rpy`` (rad).

Pure: the file is read by ``teledora.models.config_files.load_cameras_config``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.config import config_from_mapping, key_field
from teledora.operators.errors import ConfigError
from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES, DISTORTION_MODEL, CameraIntrinsics

FOURCC_LENGTH = 4


class CamerasConfigError(ConfigError):
    """A camera setting is missing, of the wrong type or out of range."""


@dataclass(frozen=True)
class CameraMount:
    """Where a camera sits: its frame in ``parent_frame``."""

    parent_frame: str
    xyz_m: tuple[float, float, float]
    rpy_rad: tuple[float, float, float]


@dataclass(frozen=True)
class PhysicalCamera:
    """One USB camera of the robot."""

    name: str = key_field()
    enabled: bool
    device: str
    width: int
    height: int
    rate_hz: float
    fourcc: str
    fx: float
    fy: float
    cx: float
    cy: float
    distortion: tuple[float, float, float, float, float]
    mount: CameraMount

    def __post_init__(self) -> None:
        if self.name not in CAMERA_NAMES:
            raise CamerasConfigError(f"unknown camera {self.name!r}; the robot has {list(CAMERA_NAMES)}")
        if self.width <= 0 or self.height <= 0:
            raise CamerasConfigError(f"{self.name}: width and height must be positive, got {self.width}x{self.height}")
        if not self.rate_hz > 0:
            raise CamerasConfigError(f"{self.name}: rate_hz must be positive, got {self.rate_hz}")
        if len(self.fourcc) != FOURCC_LENGTH:
            raise CamerasConfigError(f"{self.name}: fourcc must be 4 characters (e.g. MJPG), got {self.fourcc!r}")
        if not (self.fx > 0 and self.fy > 0):
            raise CamerasConfigError(f"{self.name}: fx and fy must be positive pixels")
        if not self.device:
            raise CamerasConfigError(f"{self.name}: device must name the capture device")

    def intrinsics(self) -> CameraIntrinsics:
        return CameraIntrinsics(self.width, self.height, self.fx, self.fy, self.cx, self.cy, tuple(self.distortion))


@dataclass(frozen=True)
class CamerasConfig:
    """Everything in cameras.yaml, checked."""

    calibration_period_s: float
    reconnect_period_s: float
    stale_after_s: float
    cameras: dict[str, PhysicalCamera]

    def __post_init__(self) -> None:
        for key in ("calibration_period_s", "reconnect_period_s", "stale_after_s"):
            if not getattr(self, key) > 0:
                raise CamerasConfigError(f"{key} must be positive")
        missing = sorted(set(CAMERA_NAMES) - set(self.cameras))
        if missing:
            raise CamerasConfigError(f"cameras: every camera needs an entry; missing {missing}")

    @property
    def enabled_cameras(self) -> list[PhysicalCamera]:
        return [c for c in self.cameras.values() if c.enabled]


def cameras_config_from_dict(data: Mapping[str, Any]) -> CamerasConfig:
    """Builds :class:`CamerasConfig` from cameras.yaml: each camera over ``camera_defaults``."""
    data = dict(data)
    defaults = data.pop("camera_defaults", None) or {}
    cameras = data.get("cameras")
    if isinstance(cameras, Mapping):
        data["cameras"] = {name: {**defaults, **(cam or {})} for name, cam in cameras.items()}
    return config_from_mapping(CamerasConfig, data, error=CamerasConfigError)


def calibration_message(
    camera: str, source: str, device: str, intr: CameraIntrinsics, rate_hz: float, mount: CameraMount, stamp_ns: int
) -> dict[str, Any]:
    """A CameraCalibration message (operators/contract/messages.py)."""
    values = (intr.fx, intr.fy, intr.cx, intr.cy, rate_hz, *intr.distortion, *mount.xyz_m, *mount.rpy_rad)
    if not all(math.isfinite(v) for v in values):
        raise CamerasConfigError(f"{camera}: calibration values must be finite")
    return {
        "stamp_ns": int(stamp_ns),
        "camera": camera,
        "source": source,
        "device": device,
        "width": int(intr.width),
        "height": int(intr.height),
        "rate_hz": float(rate_hz),
        "fx": float(intr.fx),
        "fy": float(intr.fy),
        "cx": float(intr.cx),
        "cy": float(intr.cy),
        "distortion_model": DISTORTION_MODEL,
        "distortion": [float(d) for d in intr.distortion],
        "parent_frame": mount.parent_frame,
        "mount_xyz": [float(v) for v in mount.xyz_m],
        "mount_rpy": [float(v) for v in mount.rpy_rad],
    }


class CalibrationClock:
    """When the calibration messages go out: at start, then every period."""

    def __init__(self, period_s: float) -> None:
        self.period_ns = int(period_s * 1e9)
        self._next_ns: int | None = None

    def due(self, now_ns: int) -> bool:
        if self._next_ns is None or now_ns >= self._next_ns:
            self._next_ns = now_ns + self.period_ns
            return True
        return False
