"""The LeRobot export of a sim run renders every camera at each frame's own
time from the recorded states; a run without sim topics (as on hardware) uses
the recorded images and says, per episode and camera, how many frames repeat
an image or have none."""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")

import json
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from teledora.cli import main
from teledora.operators.contract.messages import image_metadata
from teledora.operators.datasets.frame_clock import frame_times_ns
from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES
from teledora.recording import RunReader

from tests.recording.lerobot_expect import image_row
from tests.recording.sim_run import write_sim_run
from tests.recording.teleop_run import CAMERAS, H, T0, W, write_teleop_run

FPS = 30
MARKS = [(0.4, "start", "pick up the red cube"), (1.4, "keep", ""), (1.6, "start", "put it down"), (2.8, "keep", "")]
SPANS = [(0.4, 1.4), (1.6, 2.8)]


def _export(run: Path, root: Path, *extra: str) -> int:
    return main(["log", "export", str(run), "--format", "lerobot", "-o", str(root), "--codec", "libx264", *extra])


def _video(root: Path, camera: str) -> tuple[list, list[np.ndarray]]:
    """Each frame's presentation time (an exact fraction of a second) and its pixels."""
    with av.open(str(root / f"videos/observation.images.{camera}/chunk-000/file-000.mp4")) as c:
        frames = list(c.decode(video=0))
    return [f.pts * f.time_base for f in frames], [f.to_ndarray(format="rgb24").astype(np.int16) for f in frames]


@pytest.fixture(scope="module")
def sim_export(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sim")
    run = write_sim_run(tmp / "run", duration_s=3.0, marks=MARKS)
    root = tmp / "ds"
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = _export(run, root, "--render-size", "96x72")
    return code, out.getvalue(), root


def test_a_sim_run_has_all_five_cameras_with_episode_length_times_fps_frames(sim_export):
    code, out, root = sim_export
    assert code == 0, out
    info = json.loads((root / "meta/info.json").read_text())
    videos = {k for k, f in info["features"].items() if f["dtype"] == "video"}
    assert videos == {f"observation.images.{c}" for c in CAMERA_NAMES}
    assert all(info["features"][v]["shape"] == [72, 96, 3] for v in videos)
    episodes = pq.read_table(next((root / "meta/episodes").glob("*/*.parquet"))).to_pylist()
    # every frame of each marked span, the span's first at its mark: nothing cut for want of an image
    want = [len(frame_times_ns(T0 + int(a * 1e9), T0 + int(b * 1e9), FPS)) for a, b in SPANS]
    assert [e["length"] for e in episodes] == want == [31, 37]
    assert [e["teledora/start_ns"] for e in episodes] == [T0 + int(a * 1e9) for a, _ in SPANS]
    for camera in CAMERA_NAMES:
        times, _ = _video(root, camera)
        assert times == [Fraction(k, FPS) for k in range(sum(want))], camera
    assert "rendered 5 camera(s)" in out and "frames/s)" in out
    assert "repeat the previous image" not in out  # rendered frames repeat nothing


def test_timestamps_are_exactly_k_over_fps(sim_export):
    _, _, root = sim_export
    data = pq.read_table(root / "data/chunk-000/file-000.parquet")
    episodes = pq.read_table(next((root / "meta/episodes").glob("*/*.parquet"))).to_pylist()
    ts = np.asarray(data.column("timestamp").to_numpy())
    ep = np.asarray(data.column("episode_index").to_numpy())
    for e in episodes:
        n = e["length"]
        np.testing.assert_array_equal(ts[ep == e["episode_index"]], (np.arange(n) / FPS).astype(np.float32))
        for camera in CAMERA_NAMES:
            key = f"videos/observation.images.{camera}"
            assert e[f"{key}/to_timestamp"] - e[f"{key}/from_timestamp"] == pytest.approx(n / FPS)


def test_a_moving_wrist_camera_shows_a_new_image_at_every_frame(sim_export):
    """The arm moves all through the run: each frame of the left wrist camera
    differs from the one before (the recorded 3 Hz images repeat 9 of 10)."""
    _, _, root = sim_export
    _, frames = _video(root, "left_wrist")
    change = [float(np.abs(b - a).mean()) for a, b in zip(frames, frames[1:])]
    assert min(change) > 0.5, change


def test_recorded_frames_on_request_for_a_sim_run(tmp_path, capsys):
    run = write_sim_run(tmp_path / "run", duration_s=2.0)
    assert _export(run, tmp_path / "ds", "--frames", "recorded") == 0
    info = json.loads((tmp_path / "ds/meta/info.json").read_text())
    assert {k for k, f in info["features"].items() if f["dtype"] == "video"} == {
        f"observation.images.{c}" for c in CAMERAS}
    assert "repeat the previous image" in capsys.readouterr().out


def test_a_run_without_sim_topics_reports_repeated_and_missing_frames_per_episode_and_camera(tmp_path, capsys):
    """A 10 Hz camera on a 30 fps clock: two frames of three repeat. The counts
    are recomputed here from the recorded images' send times."""
    run = write_teleop_run(tmp_path / "run", duration_s=3.0, marks=MARKS)
    assert _export(run, tmp_path / "ds") == 0
    out = capsys.readouterr().out
    assert "rendered" not in out
    reader = RunReader(run)
    episodes = pq.read_table(next((tmp_path / "ds/meta/episodes").glob("*/*.parquet"))).to_pylist()
    assert len(episodes) == 2
    for e in episodes:
        times = e["teledora/start_ns"] + (np.arange(e["length"]) * 10**9) // FPS
        for camera in CAMERAS:
            rows = [image_row(reader, f"renderer__{camera}", int(t)) for t in times]
            repeated = sum(a == b for a, b in zip(rows, rows[1:]))
            assert repeated >= e["length"] // 2  # the camera is slower than the clock
            line = (f"episode {e['episode_index']} camera {camera}: {e['length']} frames, {repeated} repeat the "
                    f"previous image, 0 missing (before its first image), 0 image(s) unused")
            assert line in out


def test_frames_before_a_cameras_first_image_are_reported_missing(tmp_path, capsys):
    """A camera whose images begin 0.5 s into a run exported whole: the frames
    before its first image are missing (the episode begins at its first image)."""
    first = T0 + 500_000_000
    late = []
    for i in range(10):
        t = first + i * 100_000_000
        img = np.full((H, W, 3), 40 + i, dtype=np.uint8)
        meta = image_metadata(width=W, height=H, encoding="rgb8", camera="top_back", stamp_ns=t, fx=1, fy=1,
                              cx=W / 2, cy=H / 2)
        late.append((t, "renderer__top_back", pa.array(img.reshape(-1)), meta))
    run = write_teleop_run(tmp_path / "run", duration_s=2.0, cameras=("chest",), extra=late)
    assert _export(run, tmp_path / "ds") == 0
    out = capsys.readouterr().out
    (episode,) = pq.read_table(next((tmp_path / "ds/meta/episodes").glob("*/*.parquet"))).to_pylist()
    reader = RunReader(run)
    run_start = min(min(m.dora_ns for m in reader.iter_topic(t)) for t in reader.topics)
    clock = frame_times_ns(run_start, episode["teledora/start_ns"] + episode["length"] * 10**9 // FPS, FPS)
    missing = int(np.count_nonzero(clock < first))
    assert missing > 0 and episode["teledora/start_ns"] == clock[missing]
    assert f"episode 0 camera top_back: {episode['length']} frames," in out
    assert f"{missing} missing (before its first image)" in out
