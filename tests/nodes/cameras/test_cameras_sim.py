"""The sim cameras node: images rendered from the reported states, with their
capture (render) time, and each rendered camera's calibration with its mount."""

from __future__ import annotations

import itertools
import os

os.environ.setdefault("MUJOCO_GL", "egl")

from pathlib import Path

import numpy as np
import pytest
import yaml

from teledora import models
from teledora.nodes.cameras import cameras_sim
from tests.nodes.rendering.test_renderer import TICK, PacedNode, W, H, arms, event, ground_truth, lift, odom, shared_rig


@pytest.fixture()
def config_path(tmp_path: Path) -> str:
    data = models.load_yaml("alohamini2/renderer.yaml")
    data["camera_defaults"].update(width=W, height=H)
    for cam in data["cameras"].values():
        cam.update(enabled=True, rate_hz=1000.0)
    data["max_renders_per_cycle"] = 5
    path = tmp_path / "renderer.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_renders_the_cameras_with_capture_times_and_calibration(config_path: str, monkeypatch) -> None:
    monkeypatch.setenv("CAMERAS_NICE", "0")  # the node runs in this process: leave its priority alone
    cams = ("chest", "left_wrist")
    rig = shared_rig(config_path, cams)
    events = [event(*TICK), event("joint_states", arms()), event("lift", lift(0.2)), event("odom", odom()),
              event(*TICK), event(*TICK), event(*TICK)]
    node = PacedNode(events)
    clock = itertools.count(start=10**9, step=20_000_000)
    cameras_sim.main(["--config", config_path], node=node, clock=lambda: next(clock), rig=rig)
    for cam in cams:
        frames = [(v, m) for o, v, m in node.sent if o == cam]
        assert frames, cam
        img = node.images(cam)[-1]
        assert img.shape == (H, W, 3) and np.ptp(img) > 0  # a picture, not a blank
        meta = frames[-1][1]
        assert meta["capture_ns"] == meta["render_ns"] > 10**9
    assert {o for o, _, _ in node.sent} <= {"chest", "left_wrist", "calibration", "diagnostics"}
    from teledora.operators.contract.messages import decode

    cal = [decode("CameraCalibration", v) for o, v, _ in node.sent if o == "calibration"]
    by_cam = {c["camera"]: c for c in cal}
    assert set(by_cam) == set(cams)
    assert by_cam["left_wrist"]["parent_frame"] == "left_Fixed_Jaw" and by_cam["chest"]["source"] == "sim"
    assert (by_cam["chest"]["width"], by_cam["chest"]["height"]) == (W, H)


def teardown_module() -> None:
    from tests.nodes.rendering import test_renderer

    test_renderer.teardown_module()


def test_kinematics_run_only_for_frames_that_are_drawn(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("CAMERAS_NICE", "0")
    data = models.load_yaml("alohamini2/renderer.yaml")
    data["camera_defaults"].update(width=W, height=H)
    data["cameras"]["chest"].update(enabled=True, rate_hz=2.0)
    for name in ("top_front", "top_back", "left_wrist", "right_wrist"):
        data["cameras"][name]["enabled"] = False
    path = tmp_path / "renderer.yaml"
    path.write_text(yaml.safe_dump(data))
    rig = shared_rig(str(path), ("chest",))
    forwards = []
    real_forward = rig.forward
    monkeypatch.setattr(rig, "forward", lambda: (forwards.append(1), real_forward()))
    states = [event("joint_states", arms(stamp=i + 1, overrides={"left_shoulder_pan": 0.01 * i})) for i in range(40)]
    node = PacedNode([event("lift", lift(0.2)), event("odom", odom())] + states)
    clock = itertools.count(start=10**9, step=20_000_000)
    cameras_sim.main(["--config", str(path), "--cameras", "chest"], node=node, clock=lambda: next(clock), rig=rig)
    frames = len(node.images("chest"))
    # 40 new poses at 2 Hz over a couple of seconds of clock: a few frames, one forward pass each
    assert 1 <= frames < 20
    assert len(forwards) == frames


def test_frames_show_the_objects_where_the_sim_says_they_are(config_path: str, monkeypatch) -> None:
    from teledora.operators.contract.messages import encode

    monkeypatch.setenv("CAMERAS_NICE", "0")
    rig = shared_rig(config_path, ("chest",))
    moved = {"stamp_ns": 1, "frame_id": "world", "names": ["cube_red"], "x": [0.66], "y": [-1.27], "z": [0.42],
             "qx": [0.0], "qy": [0.0], "qz": [0.0], "qw": [1.0]}
    # the objects come first: the shared rig may carry a slow camera rate from
    # another test, and the first frame is then the only one
    events = [event("objects", encode("ObjectPoses", moved)), event("joint_states", arms()), event("lift", lift(0.2)),
              event("odom", odom()), event(*TICK), event(*TICK)]
    node = PacedNode(events)
    clock = itertools.count(start=10**9, step=20_000_000)
    cameras_sim.main(["--config", config_path, "--cameras", "chest"], node=node, clock=lambda: next(clock), rig=rig)
    assert node.images("chest")
    np.testing.assert_allclose(rig.data.body("cube_red").xpos, [0.66, -1.27, 0.42], atol=1e-9)


def test_with_the_ground_truth_as_pose_source_it_alone_poses_the_robot(config_path: str, monkeypatch) -> None:
    """``--pose-source ground_truth`` (the sim dataflows): the sim's state message
    poses arms, lift and base; no reported state is needed, and the chest
    camera moves with the ground truth's lift height."""
    monkeypatch.setenv("CAMERAS_NICE", "0")
    cams = ("chest",)
    rig = shared_rig(config_path, cams)
    chest = []
    for height in (0.2, 0.5):
        node = PacedNode([event("ground_truth", ground_truth(lift_height_m=height)), event(*TICK), event(*TICK)])
        clock = itertools.count(start=10**9, step=20_000_000)
        cameras_sim.main(["--config", config_path, "--pose-source", "ground_truth"], node=node,
                         clock=lambda: next(clock), rig=rig)
        images = node.images("chest")
        assert images, "no frame from the ground truth alone"
        assert node.diagnostics()["rejected"] == 0
        chest.append(images[-1])
    assert np.mean(chest[0] != chest[1]) > 0.05


@pytest.mark.parametrize("setting, steps, warned", [(None, cameras_sim.NICE, False), ("3", 3, False),
                                                    ("-2", None, True), ("ten", None, True)])
def test_the_priority_is_lowered_on_every_thread_and_a_bad_setting_is_reported(
        config_path: str, monkeypatch, setting, steps, warned) -> None:
    if setting is None:
        monkeypatch.delenv("CAMERAS_NICE", raising=False)
    else:
        monkeypatch.setenv("CAMERAS_NICE", setting)
    asked = []

    def record(n: int) -> int:  # the real one would lower this test process for good
        if n < 0:
            raise ValueError(n)
        asked.append(n)
        return n

    monkeypatch.setattr(cameras_sim, "lower_priority", record)
    rig = shared_rig(config_path, ("chest",))

    class LoggingNode(PacedNode):
        logs: list[tuple[str, str]] = []

        def log(self, level, message):
            self.logs.append((level, message))

    node = LoggingNode([event("ground_truth", ground_truth()), event(*TICK)])
    clock = itertools.count(start=10**9, step=20_000_000)
    cameras_sim.main(["--config", config_path, "--cameras", "chest", "--pose-source", "ground_truth"], node=node,
                     clock=lambda: next(clock), rig=rig)
    assert asked == ([] if steps is None else [steps])
    warnings = [m for level, m in node.logs if level == "warn" and "CAMERAS_NICE" in m]
    assert len(warnings) == (1 if warned else 0), node.logs
    assert node.images("chest")  # it renders either way


def test_each_render_is_sent_as_a_jpeg_that_decodes_to_the_rendered_pixels(config_path: str, monkeypatch) -> None:
    from teledora.operators.contract.compressed_image import jpeg_size

    monkeypatch.setenv("CAMERAS_NICE", "0")
    rig = shared_rig(config_path, ("chest",))
    rendered = []
    real_render = rig.render
    monkeypatch.setattr(rig, "render", lambda name: rendered.append(real_render(name).copy()) or rendered[-1])
    events = [event("ground_truth", ground_truth()), event(*TICK), event(*TICK), event(*TICK)]
    node = PacedNode(events)
    clock = itertools.count(start=10**9, step=20_000_000)
    cameras_sim.main(["--config", config_path, "--cameras", "chest", "--pose-source", "ground_truth",
                      "--jpeg-quality", "90"], node=node, clock=lambda: next(clock), rig=rig)
    frames = [(v, m) for o, v, m in node.sent if o == "chest"]
    assert frames and len(frames) == len(rendered)
    for (value, meta), pixels, img in zip(frames, rendered, node.images("chest")):
        assert meta["encoding"] == "jpeg" and jpeg_size(value) == (W, H) == (meta["width"], meta["height"])
        assert len(value) < pixels.nbytes / 3  # compressed
        err = np.abs(img.astype(int) - pixels.astype(int))
        assert err.mean() < 2.5 and np.percentile(err, 99) < 20, (err.mean(), np.percentile(err, 99))


def test_the_jpeg_quality_is_taken_from_1_to_100_and_refused_outside(monkeypatch) -> None:
    assert cameras_sim.parse_args(["--jpeg-quality", "55"]).jpeg_quality == 55
    monkeypatch.setenv("CAMERAS_JPEG_QUALITY", "70")
    assert cameras_sim.parse_args([]).jpeg_quality == 70
    for bad in ("0", "101"):
        with pytest.raises(SystemExit):
            cameras_sim.parse_args(["--jpeg-quality", bad])
