"""A short synthetic run with every kind of message the view shows (shared by the view tests)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from teledora import models
from teledora.operators.contract.messages import encode, image_metadata
from teledora.recording import RunWriter

T0 = 1_800_000_000_000_000_000
MS = 1_000_000

#: messages written per topic by :func:`write_view_run`
COUNTS = {
    "arms__joint_states": 50, "lift__state": 25, "base__odom": 25, "sim__ground_truth": 50, "ekf__pose": 25,
    "mocap__pose": 10, "lidar_front__scan": 5, "lidar_back__scan": 5, "scan_merger__scan": 5,
    "teleop__arm_targets": 10, "teleop__base_cmd": 10, "ik__joint_commands": 20, "renderer__chest": 3,
    "arms__diagnostics": 2, "flow__gyro": 10,
}
SCAN_POINTS = 180  # finite returns per scan (of 360 beams)


def arm_joints() -> list[str]:
    profile = models.load_profile()
    return [*profile.arms["left"].all_joints, *profile.arms["right"].all_joints]


def _scan(t: int, frame: str) -> pa.StructArray:
    ranges = np.full(360, np.inf, dtype=np.float32)
    ranges[::2] = 2.0
    return encode("LaserScan", {"stamp_ns": t, "frame_id": frame, "angle_min": -math.pi, "angle_max": math.pi - math.radians(1),
                                "angle_increment": math.radians(1), "time_increment": 0.0, "scan_time": 0.1,
                                "range_min": 0.15, "range_max": 12.0, "ranges": ranges, "intensities": []})


def write_view_run(path: Path) -> Path:
    """Writes the run of :data:`COUNTS` (1 s long) and returns its directory."""
    w = RunWriter(path, {"dataflow_path": "sim.yml"}, start_ns=T0)
    joints = arm_joints()
    msgs: list[tuple[int, str, pa.Array, dict]] = []

    def every(topic: str, make) -> None:
        n = COUNTS[topic]
        for i in range(n):
            t = T0 + int(i * 1000 / n) * MS
            value, meta = make(i, t)
            msgs.append((t, topic, value, meta))

    every("arms__joint_states", lambda i, t: (encode("JointState", {"stamp_ns": t, "names": joints,
          "position": [0.01 * i] * len(joints), "velocity": [], "effort": []}), {}))
    every("lift__state", lambda i, t: (encode("LiftState", {"stamp_ns": t, "height_m": 0.004 * i, "velocity_m_s": 0.1,
          "homed": True}), {}))
    pose = dict(frame_id="odom", yaw=0.0, vx=0.1, vy=0.0, wz=0.0)
    every("base__odom", lambda i, t: (encode("Odometry", {"stamp_ns": t, **pose, "child_frame_id": "base_link",
          "x": 0.004 * i, "y": 0.0}), {}))
    every("sim__ground_truth", lambda i, t: (encode("GroundTruth", {"stamp_ns": t, **pose, "frame_id": "world",
          "x": 0.002 * i, "y": 0.001 * i, "lift_height_m": 0.0, "joint_names": joints, "joint_position": [0.0] * len(joints),
          "joint_velocity": [0.0] * len(joints)}), {}))
    every("ekf__pose", lambda i, t: (encode("PoseEstimate", {"stamp_ns": t, **pose, "x": 0.004 * i, "y": 0.0005 * i,
          "covariance": [0.0] * 9, "source": "onboard"}), {}))
    every("mocap__pose", lambda i, t: (encode("MocapPose", {"stamp_ns": t, "frame_id": "world", "rigid_body_id": 1,
          "name": "am2", "position": [0.01 * i, 0.0, 0.2], "orientation": [0.0, 0.0, 0.0, 1.0], "tracking_valid": True,
          "mean_error_m": 0.001, "frame_number": i}), {}))
    every("lidar_front__scan", lambda i, t: (_scan(t, "lidar_front"), {}))
    every("lidar_back__scan", lambda i, t: (_scan(t, "lidar_back"), {}))
    every("scan_merger__scan", lambda i, t: (_scan(t, "base_link"), {}))
    target = {"enabled": True, "position": [0.3, 0.2, 0.9], "orientation": [0.0, 0.0, 0.0, 1.0], "gripper": 0.0, "slow": False}
    every("teleop__arm_targets", lambda i, t: (encode("ArmTargets", {"stamp_ns": t, "frame_id": "base_link", "left": target,
          "right": {**target, "position": [0.3, -0.2, 0.9]}}), {}))
    every("teleop__base_cmd", lambda i, t: (encode("BaseCommand", {"stamp_ns": t, "forward_m_s": 0.1, "left_m_s": 0.0,
          "yaw_rad_s": 0.2}), {}))
    left = joints[: len(joints) // 2]
    every("ik__joint_commands", lambda i, t: (encode("JointCommands", {"stamp_ns": t, "names": left,
          "q_ref": [0.02 * i] * len(left), "dq_ref": [0.0] * len(left), "status": "ok"}), {}))
    every("renderer__chest", lambda i, t: (pa.array(np.full(8 * 6 * 3, 40 * i, dtype=np.uint8)),
          image_metadata(width=8, height=6, encoding="rgb8", camera="chest", stamp_ns=t, fx=5, fy=5, cx=4, cy=3)))
    every("arms__diagnostics", lambda i, t: (encode("Diagnostics", {"stamp_ns": t, "node": "arms", "level": ["ok", "warn"][i],
          "message": "", "received": i, "sent": i, "rejected": 0, "clamped": 0, "dropped": 0, "last_error": "",
          "details_json": "{}"}), {}))
    every("flow__gyro", lambda i, t: (encode("Gyro", {"stamp_ns": t, "frame_id": "flow", "angular_velocity": [0.0, 0.0, 0.1]}), {}))
    seqs: dict[str, int] = {}
    for t, topic, value, meta in sorted(msgs, key=lambda m: m[0]):
        seq = seqs.get(topic, 0)
        seqs[topic] = seq + 1
        w.append(topic, value, {**meta, "seq": seq}, recv_ns=t + 1000)
    w.close(T0 + 1100 * MS)
    return path
