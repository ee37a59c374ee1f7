"""Which recorded messages a 3D view draws, and where.

Each function takes a decoded contract message (operators/contract/messages)
and returns plain, frame-tagged data:

* :func:`pose_of` — the base pose an Odometry, PoseEstimate, MocapPose or
  GroundTruth message carries, in the frame it names (``odom`` for odometry
  and the EKF, ``world`` for mocap and ground truth); None for a mocap frame
  without tracking.
* :func:`odom_transform` — ``odom → base_link`` from an Odometry message: the
  transform that carries the robot (and everything below it) in the view.
* :func:`scan_of` — a LaserScan's angles as a viewer wants them: first and
  last ray angle, ranges untouched (+Inf no return, -Inf too close, NaN
  invalid, REP 117).
* :func:`camera_intrinsics` — an image's pinhole matrices from its metadata.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from teledora.operators.geometry import yaw_to_quat
from teledora.operators.scene.robot_frames import Transform, planar_transform

POSE_KINDS = ("Odometry", "PoseEstimate", "MocapPose", "GroundTruth")


@dataclass(frozen=True)
class FramedPose:
    """A pose in ``frame``: position (m) and unit quaternion (x, y, z, w)."""

    frame: str
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]


@dataclass(frozen=True)
class ScanRays:
    """A scan as start angle, end angle (the last ray's, rad) and ranges (m)."""

    frame: str
    start_angle: float
    end_angle: float
    ranges: np.ndarray
    intensities: np.ndarray


@dataclass(frozen=True)
class Intrinsics:
    """Pinhole camera matrices, row-major: K (3x3), R (3x3), P (3x4)."""

    frame: str
    width: int
    height: int
    k: tuple[float, ...]
    r: tuple[float, ...]
    p: tuple[float, ...]


def _planar(frame: str, msg: Mapping[str, Any]) -> FramedPose:
    q = yaw_to_quat(float(msg["yaw"]))
    return FramedPose(frame, (float(msg["x"]), float(msg["y"]), 0.0), tuple(float(v) for v in q))  # type: ignore[arg-type]


def pose_of(kind: str, msg: Mapping[str, Any]) -> FramedPose | None:
    """The base pose carried by a message of ``kind`` (one of POSE_KINDS)."""
    if kind in ("Odometry", "PoseEstimate", "GroundTruth"):
        return _planar(str(msg["frame_id"]), msg)
    if kind == "MocapPose":
        pos, ori = np.asarray(msg["position"], float), np.asarray(msg["orientation"], float)
        if not msg["tracking_valid"] or not (np.all(np.isfinite(pos)) and np.all(np.isfinite(ori))):
            return None
        return FramedPose(str(msg["frame_id"]), tuple(float(v) for v in pos), tuple(float(v) for v in ori))  # type: ignore[arg-type]
    raise ValueError(f"not a pose message kind: {kind!r}")


def odom_transform(msg: Mapping[str, Any]) -> Transform:
    """``frame_id → child_frame_id`` (odom → base_link) of an Odometry message."""
    return planar_transform(str(msg["frame_id"]), str(msg["child_frame_id"]), msg["x"], msg["y"], msg["yaw"])


def scan_of(msg: Mapping[str, Any]) -> ScanRays:
    """A decoded LaserScan as first/last ray angle and its ranges, unchanged."""
    ranges = np.asarray(msg["ranges"], dtype=np.float64)
    intensities = np.asarray(msg["intensities"], dtype=np.float64)
    start = float(msg["angle_min"])
    end = start + float(msg["angle_increment"]) * max(len(ranges) - 1, 0)
    return ScanRays(str(msg["frame_id"]), start, end, ranges, intensities)


def camera_intrinsics(metadata: Mapping[str, Any]) -> Intrinsics | None:
    """K, R, P of an image from its metadata (``fx``, ``fy``, ``cx``, ``cy``,
    ``width``, ``height``, ``camera``); None when any is missing or not finite."""
    try:
        fx, fy, cx, cy = (float(metadata[k]) for k in ("fx", "fy", "cx", "cy"))
        width, height, frame = int(metadata["width"]), int(metadata["height"]), str(metadata["camera"])
    except (KeyError, TypeError, ValueError):
        return None
    if not all(math.isfinite(v) for v in (fx, fy, cx, cy)):
        return None
    k = (fx, 0.0, cx, 0.0, fy, cy, 0.0, 0.0, 1.0)
    r = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    p = (fx, 0.0, cx, 0.0, 0.0, fy, cy, 0.0, 0.0, 0.0, 1.0, 0.0)
    return Intrinsics(frame, width, height, k, r, p)
