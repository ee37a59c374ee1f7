"""`teledora log export --format lerobot`: the v3.0 layout, alignment, episodes, append."""

from __future__ import annotations

import json

import av
import numpy as np
import pyarrow.parquet as pq
import pytest

from teledora.cli import build_parser
from teledora.operators.datasets.lerobot_features import Units, state_names
from teledora.recording import RunReader
from teledora.recording.lerobot_export import ExportError, ExportOptions, export_run

from tests.recording.lerobot_expect import expected_frame, image_row
from tests.recording.teleop_run import CAMERAS, image_colour, write_teleop_run

MARKS = [(0.5, "start", "pick the cube"), (1.2, "keep", ""), (1.3, "start", "place it"), (1.6, "discard", ""),
         (1.7, "start", "place it"), (2.6, "keep", ""), (2.8, "keep", "")]


def options(**kw) -> ExportOptions:
    base = dict(fps=30, default_task="teleoperation", robot_type="alohamini2", units=Units(0.7), lift_travel_mm=600.0,
                vcodec="libx264", crf=18)
    return ExportOptions(**(base | kw))


def test_layout_episodes_and_values(tmp_path):
    run = write_teleop_run(tmp_path / "run", marks=MARKS)
    root = tmp_path / "ds"
    lines = []
    report = export_run(run, root, options(), append=False, progress=lines.append)
    assert [e["task"] for e in report.episodes] == ["pick the cube", "place it"]
    assert report.discarded == 1 and report.ignored_marks == 1 and not report.whole_run
    # 0.5..1.2 s and 1.7..2.6 s at 30 fps, both ends included
    assert [e["frames"] for e in report.episodes] == [22, 28]
    assert any("encoded observation.images.chest" in line for line in lines)

    info = json.loads((root / "meta/info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["fps"] == 30
    assert info["total_episodes"] == 2 and info["total_frames"] == 50 and info["total_tasks"] == 2
    assert info["features"]["observation.state"]["names"] == state_names()
    assert info["features"]["observation.images.chest"]["shape"] == [48, 64, 3]
    data = pq.read_table(root / "data/chunk-000/file-000.parquet").to_pylist()
    eps = pq.read_table(root / "meta/episodes/chunk-000/file-000.parquet").to_pylist()
    assert [r["episode_index"] for r in data[:22]] == [0] * 22 and data[22]["frame_index"] == 0
    assert [r["index"] for r in data] == list(range(50))
    assert eps[1]["dataset_from_index"] == 22 and eps[1]["dataset_to_index"] == 50
    assert eps[1]["videos/observation.images.chest/from_timestamp"] == pytest.approx(22 / 30)

    reader = RunReader(run)
    for i in (0, 7, 21, 22, 49):
        row = data[i]
        ep = eps[row["episode_index"]]
        t = ep["teledora/start_ns"] + round(row["frame_index"] * 1e9 / 30)
        want = expected_frame(reader, t, 30)
        np.testing.assert_allclose(row["observation.state"], want["state"], rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(row["action"], want["action"], rtol=1e-5, atol=1e-4)

    # video: one file per camera, every frame there, each the recorded image in force
    with av.open(str(root / "videos/observation.images.chest/chunk-000/file-000.mp4")) as c:
        frames = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
    assert len(frames) == 50
    for i in (0, 30, 49):
        row = data[i]
        t = eps[row["episode_index"]]["teledora/start_ns"] + round(row["frame_index"] * 1e9 / 30)
        colour = image_colour(image_row(reader, "renderer__chest", t))
        np.testing.assert_allclose(frames[i].reshape(-1, 3).mean(axis=0), colour, atol=6)

    stats = json.loads((root / "meta/stats.json").read_text())
    assert len(stats["observation.state"]["mean"]) == 18
    assert np.array(stats["observation.images.chest"]["mean"]).shape == (3, 1, 1)
    tasks = pq.read_table(root / "meta/tasks.parquet")
    assert tasks.column("task").to_pylist() == ["pick the cube", "place it"]


def test_no_marks_is_one_episode_and_append_continues(tmp_path, capsys):
    write_teleop_run(tmp_path / "a", duration_s=1.0)
    write_teleop_run(tmp_path / "b", duration_s=1.0, marks=[(0.2, "start", "wave")])
    root = tmp_path / "ds"
    args = build_parser().parse_args(["log", "export", str(tmp_path / "a"), "--format", "lerobot", "-o", str(root),
                                      "--codec", "libx264"])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "whole run as one episode" in out
    # a second run needs --append
    args = build_parser().parse_args(["log", "export", str(tmp_path / "b"), "--format", "lerobot", "-o", str(root),
                                      "--codec", "libx264"])
    assert args.func(args) == 2
    args.append = True
    assert args.func(args) == 0
    info = json.loads((root / "meta/info.json").read_text())
    assert info["total_episodes"] == 2 and info["total_tasks"] == 2
    eps = pq.read_table(root / "meta/episodes/chunk-000/file-001.parquet").to_pylist()
    assert eps[0]["episode_index"] == 1 and eps[0]["data/file_index"] == 1
    first = pq.read_table(root / "data/chunk-000/file-000.parquet")
    second = pq.read_table(root / "data/chunk-000/file-001.parquet")
    assert second.column("index")[0].as_py() == first.num_rows
    assert second.column("task_index")[0].as_py() == 1
    assert (root / "videos/observation.images.left_wrist/chunk-000/file-001.mp4").exists()
    stats = json.loads((root / "meta/stats.json").read_text())
    assert stats["index"]["max"] == [first.num_rows + second.num_rows - 1]
    assert stats["index"]["count"] == [first.num_rows + second.num_rows]


def test_append_refuses_other_fps_and_missing_streams(tmp_path):
    run = write_teleop_run(tmp_path / "run", duration_s=1.0)
    export_run(run, tmp_path / "ds", options(), append=False)
    with pytest.raises(ExportError, match="fps"):
        export_run(run, tmp_path / "ds", options(fps=15), append=True)
    (run / "lift__state.arrow").unlink()
    (run / "lift__state.arrow.crc").unlink(missing_ok=True)
    with pytest.raises(ExportError, match="lift state"):
        export_run(run, tmp_path / "ds2", options(), append=False)


def test_cameras_found_by_image_metadata(tmp_path):
    from teledora.recording.lerobot_export import camera_topics

    run = write_teleop_run(tmp_path / "run", duration_s=0.5)
    assert camera_topics(RunReader(run)) == {c: f"renderer__{c}" for c in CAMERAS}
