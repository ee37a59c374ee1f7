"""The exported dataset, read by LeRobot itself (``LeRobotDataset``, video via PyAV).

LeRobot (with torch, several GB) lives in its own virtual environment outside
the repository, built by ``tools/lerobot_env.sh``; this test runs LeRobot in a
subprocess there and skips when that environment has not been built.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from teledora.operators.datasets.lerobot_features import Units, state_names
from teledora.recording import RunReader
from teledora.recording.lerobot_export import ExportOptions, export_run

from tests.recording.lerobot_expect import expected_frame, image_row
from tests.recording.teleop_run import CAMERAS, H, W, image_colour, write_teleop_run

LEROBOT_VERSION = "0.4.4"
CHECK_SCRIPT = Path(__file__).with_name("lerobot_load_check.py")


def lerobot_python() -> Path | None:
    """The LeRobot environment's python, if tools/lerobot_env.sh has finished building it."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = Path(os.environ.get("TELEDORA_LEROBOT_VENV") or cache / "teledora" / f"lerobot-{LEROBOT_VERSION}")
    python = venv / "bin" / "python"
    return python if (venv / ".teledora-complete").exists() and python.exists() else None


PYTHON = lerobot_python()
pytestmark = pytest.mark.skipif(
    PYTHON is None, reason=f"LeRobot {LEROBOT_VERSION} environment not built (run tools/lerobot_env.sh; several GB)")

MARKS = [(0.4, "start", "pick up the red cube"), (1.4, "keep", ""), (1.6, "start", "put it down"), (2.8, "keep", "")]


def test_lerobot_loads_the_export(tmp_path):
    run = write_teleop_run(tmp_path / "run", duration_s=3.0, marks=MARKS)
    second = write_teleop_run(tmp_path / "run2", duration_s=1.0)
    root = tmp_path / "ds"
    opts = ExportOptions(fps=30, default_task="teleoperation", robot_type="alohamini2", units=Units(0.7),
                         lift_travel_mm=600.0)  # LeRobot's own default codec, AV1 (SVT-AV1)
    first = export_run(run, root, opts, append=False)
    more = export_run(second, root, opts, append=True)
    lengths = [e["frames"] for e in first.episodes + more.episodes]
    total = sum(lengths)
    starts = [e["start_ns"] for e in first.episodes + more.episodes]
    # frames to look at: first and last of each episode, one in the middle
    offsets = np.cumsum([0] + lengths)
    picks = sorted({int(o) for o in offsets[:-1]} | {int(o) - 1 for o in offsets[1:]} | {int(offsets[1]) // 2})

    proc = subprocess.run([str(PYTHON), str(CHECK_SCRIPT), "local/teledora_test", str(root), ",".join(map(str, picks))],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])

    assert got["codebase_version"] == "v3.0"
    assert got["num_frames"] == total and got["num_episodes"] == 3 and got["fps"] == 30
    assert got["episode_lengths"] == lengths
    assert got["tasks"] == ["pick up the red cube", "put it down", "teleoperation"]
    assert got["state_names"] == state_names()
    assert set(got["camera_keys"]) == {f"observation.images.{c}" for c in CAMERAS}
    assert {"observation.state", "action", "observation.images.chest"} <= set(got["stats_keys"])

    readers = [RunReader(run)] * len(first.episodes) + [RunReader(second)] * len(more.episodes)
    for idx in picks:
        item = got["items"][str(idx)]
        ep = int(np.searchsorted(offsets, idx, side="right") - 1)
        k = idx - int(offsets[ep])
        assert item["episode_index"] == ep and item["frame_index"] == k
        assert item["timestamp"] == pytest.approx(k / 30, abs=1e-6)
        assert item["state_shape"] == [18] and item["action_shape"] == [18]
        t = starts[ep] + round(k * 1e9 / 30)
        want = expected_frame(readers[ep], t, 30)
        np.testing.assert_allclose(item["state"], want["state"], rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(item["action"], want["action"], rtol=1e-5, atol=1e-4)
        for c, cam in enumerate(CAMERAS):
            img = item[f"observation.images.{cam}"]
            assert img["shape"] == [3, H, W]
            row = image_row(readers[ep], f"renderer__{cam}", t)
            np.testing.assert_allclose(img["mean_rgb"], image_colour(row + 100 * c), atol=8)


def test_lerobot_loads_a_sim_export_with_five_rendered_cameras(tmp_path):
    """A sim run's cameras rendered at each frame's time: LeRobot finds all five,
    and the image it decodes for a frame is the render at that frame's time."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    from teledora.devices.rendering.offline_render import RecordedStateRenderer
    from teledora.models.config_files import load_profile, load_renderer_config
    from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES

    from tests.recording.sim_run import write_sim_run

    run = write_sim_run(tmp_path / "run", duration_s=2.0, marks=[(0.3, "start", "pick"), (1.8, "keep", "")])
    root = tmp_path / "ds"
    opts = ExportOptions(fps=30, default_task="teleoperation", robot_type="alohamini2", units=Units(0.7),
                         lift_travel_mm=600.0)
    size = (96, 72)
    with RecordedStateRenderer(RunReader(run), load_renderer_config(), load_profile(), size=size) as renderer:
        report = export_run(run, root, opts, append=False, renderer=renderer)
        (episode,) = report.episodes
        n = episode["frames"]
        picks = [0, 1, n // 2, n - 1]
        times = [episode["start_ns"] + k * 10**9 // 30 for k in picks]
        want = {k: renderer.render(t) for k, t in zip(picks, times)}

    proc = subprocess.run([str(PYTHON), str(CHECK_SCRIPT), "local/teledora_sim", str(root), ",".join(map(str, picks))],
                          capture_output=True, text=True, timeout=600, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["num_frames"] == n == 46 and got["episode_lengths"] == [n]
    assert set(got["camera_keys"]) == {f"observation.images.{c}" for c in CAMERA_NAMES}
    for k in picks:
        item = got["items"][str(k)]
        assert item["frame_index"] == k and item["timestamp"] == pytest.approx(k / 30, abs=1e-6)
        for cam in CAMERA_NAMES:
            img = item[f"observation.images.{cam}"]
            assert img["shape"] == [3, size[1], size[0]]
            np.testing.assert_allclose(img["mean_rgb"], want[k][cam].reshape(-1, 3).mean(axis=0), atol=6)
