"""`teledora video`: MP4 from recorded camera images, or rendered from recorded states."""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

from pathlib import Path

import cv2
import numpy as np
import pyarrow as pa
import pytest

from teledora import models
from teledora.cli import main
from teledora.operators.contract.messages import encode, image_metadata
from teledora.recording import RunWriter

T0 = 1_700_000_000_000_000_000
COLORS = [(200, 30, 30), (30, 200, 30), (30, 30, 200)]


def read_mp4(path: Path) -> list[np.ndarray]:
    cap = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, frame = cap.read()
        if not ok:
            break
        frames.append(frame[:, :, ::-1])  # back to RGB
    cap.release()
    return frames


def test_recorded_images_become_an_mp4(tmp_path):
    writer = RunWriter(tmp_path / "run", start_ns=T0)
    for i in range(12):
        img = np.zeros((48, 64, 3), np.uint8)
        img[:] = COLORS[i // 4]
        meta = image_metadata(width=64, height=48, encoding="rgb8", camera="chest", stamp_ns=T0 + i * 10**8,
                              fx=1.0, fy=1.0, cx=31.5, cy=23.5)
        writer.append("renderer__chest", pa.array(img.reshape(-1)), meta, recv_ns=T0 + i * 10**8)
    writer.close(T0 + 2 * 10**9)
    out = tmp_path / "chest.mp4"
    assert main(["video", str(tmp_path / "run"), "--camera", "chest", "-o", str(out)]) == 0
    frames = read_mp4(out)
    assert len(frames) == 12 and frames[0].shape == (48, 64, 3)
    for i, frame in enumerate(frames):
        assert np.abs(frame.reshape(-1, 3).mean(axis=0) - COLORS[i // 4]).max() < 20, i
    cap = cv2.VideoCapture(str(out))
    assert cap.get(cv2.CAP_PROP_FPS) == pytest.approx(10.0, abs=0.1)
    cap.release()


def _record_states(run: Path, with_odom: bool = True) -> None:
    profile = models.load_profile()
    q = profile.home_q()
    writer = RunWriter(run, start_ns=T0)
    for i in range(20):  # 1 s at 20 Hz; the lift rises 0 -> 0.57 m
        t = T0 + i * 50_000_000
        js = encode("JointState", {"stamp_ns": t, "names": list(q), "position": list(q.values()), "velocity": [], "effort": []})
        lift = encode("LiftState", {"stamp_ns": t, "height_m": 0.03 * i, "velocity_m_s": 0.0, "homed": True})
        writer.append("arms__joint_states", js, {}, recv_ns=t)
        writer.append("lift__state", lift, {}, recv_ns=t + 1)
        if with_odom:
            odom = encode("Odometry", {"stamp_ns": t, "frame_id": "odom", "child_frame_id": "base_link", "x": 0.0,
                                       "y": 0.0, "yaw": 0.0, "vx": 0.0, "vy": 0.0, "wz": 0.0})
            writer.append("base__odom", odom, {}, recv_ns=t + 2)
    writer.close(T0 + 2 * 10**9)


def test_without_images_the_camera_is_rendered_from_recorded_states(tmp_path):
    _record_states(tmp_path / "run")
    out = tmp_path / "chest.mp4"
    code = main(["video", str(tmp_path / "run"), "--camera", "chest", "-o", str(out), "--fps", "10",
                 "--width", "64", "--height", "48"])
    assert code == 0
    frames = read_mp4(out)
    assert 8 <= len(frames) <= 10 and frames[0].shape == (48, 64, 3)
    assert frames[0].std() > 5
    # the chest camera rides the lift: the first and last frames differ
    assert np.mean(np.abs(frames[0].astype(int) - frames[-1].astype(int))) > 5


def test_a_run_without_base_state_is_refused_with_a_reason(tmp_path, capsys):
    _record_states(tmp_path / "run", with_odom=False)
    code = main(["video", str(tmp_path / "run"), "--camera", "chest", "-o", str(tmp_path / "x.mp4"),
                 "--width", "64", "--height", "48"])
    assert code == 1
    assert "no state for base" in capsys.readouterr().err


def test_irregular_frames_play_in_real_time(tmp_path):
    """Frames made at 0, 0.1 and 0.4 s at 10 fps: the second one stays on screen
    until the third is due, so the video lasts as long as the recording."""
    writer = RunWriter(tmp_path / "run", start_ns=T0)
    for i, t_s in enumerate((0.0, 0.1, 0.4)):
        img = np.zeros((48, 64, 3), np.uint8)
        img[:] = COLORS[i]
        t = T0 + int(t_s * 1e9)
        meta = image_metadata(width=64, height=48, encoding="rgb8", camera="chest", stamp_ns=t, fx=1.0, fy=1.0,
                              cx=31.5, cy=23.5)
        meta["render_ns"] = t
        writer.append("renderer__chest", pa.array(img.reshape(-1)), meta, recv_ns=T0 + 5 * 10**9)  # received in a burst
    writer.close(T0 + 6 * 10**9)
    out = tmp_path / "chest.mp4"
    assert main(["video", str(tmp_path / "run"), "--camera", "chest", "-o", str(out), "--fps", "10"]) == 0
    colors = [int(np.argmax(f.reshape(-1, 3).mean(axis=0))) for f in read_mp4(out)]
    assert colors == [0, 1, 1, 1, 2]


def test_a_sim_run_is_rendered_again_at_an_exact_frame_clock(tmp_path, capsys):
    """The live wrist camera ran at 3 Hz; the video renders it at 30 fps from
    the recorded ground truth, one frame per 1/30 s of states, each new."""
    from teledora.operators.datasets.frame_clock import frame_times_ns
    from teledora.recording import RunReader
    from tests.recording.sim_run import write_sim_run

    run = write_sim_run(tmp_path / "run", duration_s=1.5)
    out = tmp_path / "wrist.mp4"
    code = main(["video", str(run), "--camera", "left_wrist", "-o", str(out), "--fps", "30", "--width", "96",
                 "--height", "72"])
    assert code == 0
    assert "rendered from recorded states" in capsys.readouterr().out
    stamps = [m.stamp_ns for m in RunReader(run).iter_topic("sim__ground_truth")]
    frames = read_mp4(out)
    assert len(frames) == len(frame_times_ns(stamps[0], stamps[-1], 30)) == 45
    change = [np.abs(b.astype(int) - a.astype(int)).mean() for a, b in zip(frames, frames[1:])]
    assert min(change) > 0.5


def test_a_sim_runs_recorded_images_on_request(tmp_path, capsys):
    from tests.recording.sim_run import write_sim_run

    run = write_sim_run(tmp_path / "run", duration_s=1.5)
    out = tmp_path / "chest.mp4"
    assert main(["video", str(run), "--camera", "chest", "-o", str(out), "--recorded"]) == 0
    assert "from recorded topic renderer__chest" in capsys.readouterr().out
