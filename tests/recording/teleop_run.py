"""A small synthetic teleop run with every stream the LeRobot export reads.

Streams at their sim rates: arm joint states 90 Hz, servo targets 50 Hz, lift
and base 50 Hz, teleop commands 30 Hz, two cameras at 10 Hz whose pixels encode
the frame number (a solid colour per frame, so a decoded video frame can be
matched to the image that was recorded). Values follow simple ramps, so a test
can compute what each dataset frame must hold.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyarrow as pa

from teledora.operators.contract.messages import encode, image_metadata
from teledora.recording import RunWriter

T0 = 1_800_000_000_000_000_000
MS = 1_000_000
SIDES = ("left", "right")
JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw_joint", "wrist_roll", "gripper")
NAMES = [f"{s}_{j}" for s in SIDES for j in JOINTS]
CAMERAS = ("chest", "left_wrist")
W, H = 64, 48


def joint_q(t_s: float, k: int) -> float:
    """Joint k's position (rad) at time t (grippers stay inside 0..0.7)."""
    if JOINTS[k % 7] == "gripper":
        return 0.35 + 0.3 * math.sin(t_s + k)
    return 0.1 * k + 0.2 * t_s


def command_q(t_s: float, k: int) -> float:
    return joint_q(t_s, k) + 0.01


def image_colour(i: int) -> tuple[int, int, int]:
    """The solid colour of camera frame i (distinct, far apart in RGB)."""
    return ((i * 37) % 256, (i * 91 + 50) % 256, (255 - i * 23) % 256)


def _every(rate_hz: float, duration_s: float, offset_ms: float = 0.0):
    n = int(duration_s * rate_hz)
    for i in range(n):
        yield i, T0 + int((offset_ms + i * 1000.0 / rate_hz) * MS)


def textured(i: int, c: int, w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    """A camera-like frame: a drifting gradient and checker with sensor noise."""
    y, x = np.mgrid[0:h, 0:w]
    base = ((x + 3 * i) // 32 + (y + 2 * i) // 32) % 2 * 60 + (x * 120 // w) + 40 * c
    img = np.stack([base, (base + y * 80 // h) % 256, (255 - base) % 256], axis=2)
    return np.clip(img + rng.normal(0, 4, img.shape), 0, 255).astype(np.uint8)


def write_teleop_run(path: Path, duration_s: float = 3.0, marks: list[tuple[float, str, str]] | None = None,
                     cameras: tuple[str, ...] = CAMERAS, size: tuple[int, int] = (W, H), camera_hz: float = 10,
                     texture: bool = False, extra: list[tuple[int, str, pa.Array, dict]] | None = None) -> Path:
    """Writes the run; ``marks`` are (time s, event, task) episode marks on episodes/marks.

    Camera frames are solid colours (``image_colour``) unless ``texture`` asks
    for camera-like content (for encoding speed)."""
    rng = np.random.default_rng(0)
    width, height = size
    w = RunWriter(path, {"dataflow_path": "sim.yml"}, start_ns=T0)
    events = []
    for i, t in _every(90, duration_s, 1):
        ts = (t - T0) / 1e9
        v = encode("JointState", {"stamp_ns": t, "names": NAMES, "position": [joint_q(ts, k) for k in range(14)],
                                  "velocity": [], "effort": []})
        events.append((t, "arms__joint_states", v, {}))
    for i, t in _every(50, duration_s, 2):
        ts = (t - T0) / 1e9
        v = encode("JointCommands", {"stamp_ns": t, "names": NAMES, "q_ref": [command_q(ts, k) for k in range(14)],
                                     "dq_ref": [0.0] * 14, "status": "ok"})
        events.append((t, "arms__servo_targets", v, {}))
        events.append((t + MS, "lift__state", encode("LiftState", {"stamp_ns": t, "height_m": 0.1 + 0.01 * ts,
                                                                   "velocity_m_s": 0.01, "homed": True}), {}))
        events.append((t + 2 * MS, "base__odom", encode("Odometry", {
            "stamp_ns": t, "frame_id": "odom", "child_frame_id": "base_link", "x": 0.0, "y": 0.0, "yaw": 0.0,
            "vx": 0.1 * ts, "vy": -0.05, "wz": 0.2}), {}))
    for i, t in _every(30, duration_s, 3):
        ts = (t - T0) / 1e9
        events.append((t, "teleop__base_cmd", encode("BaseCommand", {"stamp_ns": t, "forward_m_s": 0.1 * ts,
                                                                    "left_m_s": -0.05, "yaw_rad_s": 0.2}), {}))
        events.append((t + MS, "teleop__lift_cmd", encode("LiftCommand", {"stamp_ns": t, "velocity_m_s": 0.01}), {}))
    for i, t in _every(camera_hz, duration_s, 5):
        for c, cam in enumerate(cameras):
            if texture:
                img = textured(i, c, width, height, rng)
            else:
                img = np.empty((height, width, 3), dtype=np.uint8)
                img[:] = image_colour(i + 100 * c)
            meta = image_metadata(width=width, height=height, encoding="rgb8", camera=cam, stamp_ns=t, fx=1, fy=1,
                                  cx=width / 2, cy=height / 2)
            events.append((t + c * MS, f"renderer__{cam}", pa.array(img.reshape(-1)), meta))
    events += extra or []  # (time ns, topic, value, metadata) written as they are, checked by nothing
    for ts, event, task in marks or []:
        t = T0 + int(ts * 1e9)
        events.append((t, "episodes__marks", encode("EpisodeMark", {"stamp_ns": t, "event": event, "task": task}), {}))
    events.sort(key=lambda e: e[0])
    for t, topic, value, meta in events:
        w.append(topic, value, {**meta, "timestamp": t}, recv_ns=t + 100_000)
    w.close(T0 + int(duration_s * 1e9))
    return path
