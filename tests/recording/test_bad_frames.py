"""A stored image frame that is no valid image (written by the run writer, which
does not check images; the recorder refuses them) never ends an export or a
video: it is skipped and counted."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest
from mcap.reader import make_reader

from teledora.cli import build_parser
from tests.recording.teleop_run import MS, T0, H, W, write_teleop_run


def bad_frames() -> list[tuple[int, str, pa.Array, dict]]:
    meta = {"width": W, "height": H, "encoding": "rgb8", "camera": "chest", "stamp_ns": T0}
    pixels = pa.array(np.zeros(W * H * 3, np.uint8))
    return [
        (T0 + 1 * MS, "renderer__chest", pixels, {**meta, "height": -1, "width": -W * H}),  # the camera's first row
        (T0 + 450 * MS, "renderer__chest", pixels, {**meta, "encoding": "yuv422"}),
        (T0 + 550 * MS, "renderer__chest", pa.array(np.zeros(8 * 6 * 3, np.uint8)), {**meta, "width": 8, "height": 6}),
        (T0 + 650 * MS, "renderer__chest", pa.array(np.zeros(5, np.uint8)), {**meta, "height": 0}),
    ]


def run_cli(*argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return args.func(args)


@pytest.fixture
def run(tmp_path):
    return write_teleop_run(tmp_path / "r", duration_s=1.0, extra=bad_frames())


def test_mcap_export_skips_and_counts_frames_that_are_no_valid_images(run, capsys):
    assert run_cli("log", "export", str(run), "-o", str(run / "x.mcap")) == 0
    out = capsys.readouterr().out
    assert "skipped 3 image frame(s) that are not valid images" in out and "renderer__chest seq" in out
    with open(run / "x.mcap", "rb") as f:
        chest = [m for _, c, m in make_reader(f).iter_messages() if c.topic == "/renderer/chest"]
    assert len(chest) == 11  # the ten good frames and the valid 8x6 one; the rest are in no channel


def test_lerobot_export_skips_and_counts_frames_that_are_no_valid_images_of_the_camera(run, capsys):
    root = run.parent / "ds"
    assert run_cli("log", "export", str(run), "--format", "lerobot", "-o", str(root), "--codec", "libx264") == 0
    out = capsys.readouterr().out
    assert "camera chest: skipped 4 frame(s)" in out and "not two positive integers" in out
    info = json.loads((root / "meta/info.json").read_text())
    assert info["features"]["observation.images.chest"]["shape"][:2] == [H, W]


def test_lerobot_export_of_a_camera_with_no_valid_frame_is_a_clear_error(tmp_path, capsys):
    meta = {"width": 4, "height": -1, "encoding": "rgb8", "camera": "top"}
    run = write_teleop_run(tmp_path / "r", duration_s=1.0, cameras=(),
                           extra=[(T0 + 5 * MS, "renderer__top", pa.array(np.zeros(12, np.uint8)), meta)])
    assert run_cli("log", "export", str(run), "--format", "lerobot", "-o", str(tmp_path / "ds"), "--codec", "libx264") == 2
    err = capsys.readouterr().err
    assert "renderer__top holds no valid image" in err


def test_video_skips_frames_that_are_no_valid_images(run, capsys):
    assert run_cli("video", str(run), "--camera", "chest", "-o", str(run / "chest.mp4")) == 0
    captured = capsys.readouterr()
    assert "wrote" in captured.out and (run / "chest.mp4").stat().st_size > 0
    assert captured.err.count("skipping frame seq") == 3  # the valid 8x6 frame is resized
