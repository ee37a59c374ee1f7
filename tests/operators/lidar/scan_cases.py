"""Synthetic scans of known geometry for the merger tests and benchmark.

A lidar on a moving base scans a room; every ray is cast from the lidar's
pose at that ray's own time (the base follows a constant twist).
"""

from __future__ import annotations

import math

import numpy as np

from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.geometry import Pose2D
from teledora.operators.lidar.pose_history import OdometrySample, PoseHistory
from teledora.operators.lidar.scan_merger import LidarMount
from teledora.fakes.rplidar_a1 import SyntheticRoom  # noqa: E402
from teledora.models import load_profile

BASE_FRAME = load_profile().base_frame

FRONT = LidarMount(0.17, 0.0, 0.17, 0.0)
BACK = LidarMount(-0.17, 0.0, 0.17, math.pi)


def base_pose(t_s: float, v: float = 0.0, w: float = 0.0, x0: float = 0.0, y0: float = 0.0, yaw0: float = 0.0):
    """Pose at time t of a base moving with constant body twist (v forward, w yaw rate)."""
    yaw = yaw0 + w * t_s
    if abs(w) < 1e-12:
        return x0 + v * t_s * math.cos(yaw0), y0 + v * t_s * math.sin(yaw0), yaw
    r = v / w
    return x0 + r * (math.sin(yaw) - math.sin(yaw0)), y0 - r * (math.cos(yaw) - math.cos(yaw0)), yaw


def odom_history(t_end_s: float, v: float = 0.0, w: float = 0.0, rate_hz: float = 100.0, **start) -> PoseHistory:
    h = PoseHistory(max_age_s=10.0)
    for k in range(int(t_end_s * rate_hz) + 2):
        t = k / rate_hz
        x, y, yaw = base_pose(t, v, w, **start)
        h.add(OdometrySample(int(round(t * 1e9)), Pose2D(x, y, yaw), vx=v, wz=w))
    return h


def synthetic_scan(
    room: SyntheticRoom,
    mount: LidarMount,
    stamp_s: float,
    rays: int = 360,
    scan_time_s: float = 1 / 5.5,
    v: float = 0.0,
    w: float = 0.0,
    frame_id: str = "lidar",
    range_max: float = 12.0,
    **start,
) -> LaserScan:
    """A clockwise-spinning lidar's scan in the layout of the binning operator:
    angles ascending, time running backwards from ``stamp_s`` (ray 0 newest)."""
    inc = 2 * math.pi / rays
    dt = scan_time_s / rays
    angles = -(rays - 0.5) * inc + np.arange(rays) * inc
    ranges = np.empty(rays)
    for i, a in enumerate(angles):
        t = stamp_s - i * dt
        bx, by, byaw = base_pose(t, v, w, **start)
        c, s = math.cos(byaw), math.sin(byaw)
        room.lidar_x = bx + c * mount.x - s * mount.y
        room.lidar_y = by + s * mount.x + c * mount.y
        room.lidar_yaw = byaw + mount.yaw
        d = room.distance(room.lidar_yaw + a)
        ranges[i] = d if d <= range_max else np.inf
    return LaserScan(
        stamp_ns=int(round(stamp_s * 1e9)),
        frame_id=frame_id,
        angle_min=float(angles[0]),
        angle_max=float(angles[-1]),
        angle_increment=inc,
        time_increment=-dt,
        scan_time=scan_time_s,
        range_min=0.15,
        range_max=range_max,
        ranges=ranges,
        intensities=np.full(rays, 40.0),
    )


def merged_points_world(scan: LaserScan, pose) -> tuple[np.ndarray, np.ndarray]:
    """World (x, y) of a merged scan's finite returns, placed with the base pose at its stamp."""
    ok = np.isfinite(scan.ranges)
    a, r = scan.angles()[ok], scan.ranges[ok].astype(float)
    x, y, yaw = pose
    bx, by = r * np.cos(a), r * np.sin(a)
    return x + math.cos(yaw) * bx - math.sin(yaw) * by, y + math.sin(yaw) * bx + math.cos(yaw) * by


def wall_error(room: SyntheticRoom, wx: np.ndarray, wy: np.ndarray) -> np.ndarray:
    """Distance of world points from the nearest room surface (walls or pillar)."""
    d = np.minimum.reduce([
        np.abs(wx - room.x_min), np.abs(wx - room.x_max), np.abs(wy - room.y_min), np.abs(wy - room.y_max),
        np.abs(np.hypot(wx - room.pillar_x, wy - room.pillar_y) - room.pillar_radius),
    ])
    return d
