"""What a dataset frame exported from tests/recording/teleop_run.py must hold,
computed from the recorded messages (not from the exporter's code)."""

from __future__ import annotations

import math

from teledora.recording import RunReader

from tests.recording.teleop_run import JOINTS, SIDES

CLOSED = 0.7  # models/alohamini2/drive.yaml gripper_closed_rad


def _latest(reader: RunReader, topic: str, t_ns: int):
    best = None
    for msg in reader.iter_topic(topic):
        sent = msg.dora_ns if msg.dora_ns is not None else msg.recv_ns
        if sent <= t_ns and (best is None or sent >= best[0]):
            best = (sent, msg)
    assert best is not None, f"no {topic} message at or before {t_ns}"
    return best[1]


def _arm(row: dict, field: str) -> list[float]:
    q = dict(zip(row["names"], row[field]))
    out = []
    for side in SIDES:
        for joint in JOINTS:
            v = q[f"{side}_{joint}"]
            out.append(100.0 * (1 - v / CLOSED) if joint == "gripper" else math.degrees(v))
    return out


def expected_frame(reader: RunReader, t_ns: int, fps: int) -> dict:
    """State, action and each camera's recorded image row at frame time ``t_ns``."""
    js = _latest(reader, "arms__joint_states", t_ns).value[0].as_py()
    odom = _latest(reader, "base__odom", t_ns).value[0].as_py()
    lift = _latest(reader, "lift__state", t_ns).value[0].as_py()
    t_act = t_ns + 1_000_000_000 // fps
    cmd = _latest(reader, "arms__servo_targets", t_act).value[0].as_py()
    base = _latest(reader, "teleop__base_cmd", t_act).value[0].as_py()
    lcmd = _latest(reader, "teleop__lift_cmd", t_act).value[0].as_py()
    height_mm = lift["height_m"] * 1000
    state = _arm(js, "position") + [odom["vx"], odom["vy"], math.degrees(odom["wz"]), height_mm]
    action = _arm(cmd, "q_ref") + [base["forward_m_s"], base["left_m_s"], math.degrees(base["yaw_rad_s"]),
                                   min(600.0, max(0.0, height_mm + lcmd["velocity_m_s"] * 1000 / fps))]
    return {"state": state, "action": action}


def image_row(reader: RunReader, topic: str, t_ns: int) -> int:
    """Index (in recorded order) of the latest image of ``topic`` at or before ``t_ns``."""
    best = -1
    for i, msg in enumerate(reader.iter_topic(topic)):
        sent = msg.dora_ns if msg.dora_ns is not None else msg.recv_ns
        if sent <= t_ns:
            best = i
    return best
