"""A small synthetic sim run: tests/recording/teleop_run.py's streams plus what
only the sim records, the sim's ground truth (arm joints, lift, base pose) and
its objects' poses, at 50 Hz, with the base turning and a cube carried.

Like a loaded machine's run, its live cameras are slow (``camera_hz``) and only
two of the five were on; an export renders all five from the states instead.
"""

from __future__ import annotations

import math
from pathlib import Path

from teledora.operators.contract.messages import encode

from tests.recording.teleop_run import MS, NAMES, T0, joint_q, write_teleop_run

OBJECTS = ("cube_red", "cube_blue")


def base_pose(t_s: float) -> tuple[float, float, float]:
    """x, y, yaw (yaw wrapped to (-pi, pi], as odometry reports it)."""
    yaw = 2.6 + 0.5 * t_s  # passes pi at about 1.1 s
    return 0.1 * t_s, 0.05 * t_s, math.remainder(yaw, 2 * math.pi)


def cube_pose(t_s: float) -> tuple[list[float], list[float]]:
    """Red cube position and (qx, qy, qz, qw): lifted and turned about z."""
    angle = 0.8 * t_s
    return [0.56, -1.47 + 0.05 * t_s, 0.42 + 0.03 * t_s], [0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)]


def sim_events(duration_s: float) -> list[tuple[int, str, object, dict]]:
    events = []
    for i in range(int(duration_s * 50)):
        t = T0 + (4 + i * 20) * MS
        ts = (t - T0) / 1e9
        x, y, yaw = base_pose(ts)
        gt = encode("GroundTruth", {
            "stamp_ns": t, "frame_id": "world", "x": x, "y": y, "yaw": yaw, "vx": 0.1, "vy": 0.05, "wz": 0.5,
            "lift_height_m": 0.1 + 0.05 * ts, "joint_names": NAMES,
            "joint_position": [joint_q(ts, k) for k in range(14)], "joint_velocity": [0.0] * 14})
        pos, quat = cube_pose(ts)
        objects = encode("ObjectPoses", {
            "stamp_ns": t, "frame_id": "world", "names": list(OBJECTS),
            "x": [pos[0], 0.44], "y": [pos[1], -1.47], "z": [pos[2], 0.42],
            "qx": [quat[0], 0.0], "qy": [quat[1], 0.0], "qz": [quat[2], 0.0], "qw": [quat[3], 1.0]})
        events.append((t + MS // 2, "sim__ground_truth", gt, {}))
        events.append((t + MS // 2, "sim__objects", objects, {}))
    return events


def write_sim_run(path: Path, duration_s: float = 3.0, marks: list[tuple[float, str, str]] | None = None,
                  camera_hz: float = 3.0) -> Path:
    return write_teleop_run(path, duration_s=duration_s, marks=marks, camera_hz=camera_hz,
                            extra=sim_events(duration_s))
