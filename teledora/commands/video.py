"""`teledora video RUN --camera chest`: an MP4 of one camera from a recorded run.

When the run recorded that camera's images (a topic ``<node>__<camera>``), they
are written as they are. Otherwise the camera is rendered from the recorded
states (``*__joint_states``, ``lift__state``, ``base__odom`` or
``sim__ground_truth``) by feeding them, in recorded order, through the renderer
node's own state handling, at ``--fps`` on the recording's clock.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from teledora.commands._progress import recorded_total, track
from teledora.operators.errors import TeledoraError
from teledora.recording import RecordingError, RunReader, replay_metadata

STATE_TOPIC_SUFFIXES = {
    "joint_states": ("arms__joint_states", "__joint_states"),
    "lift": ("lift__state",),
    "odom": ("base__odom",),
    "ground_truth": ("sim__ground_truth", "__ground_truth"),
}


class VideoError(TeledoraError, RuntimeError):
    """The run cannot give a video of the requested camera."""


def _pick(topics: list[str], candidates: tuple[str, ...]) -> str | None:
    for cand in candidates:
        if cand in topics:
            return cand
        for topic in topics:
            if topic.endswith(cand) and cand.startswith("__"):
                return topic
    return None


def image_topic(reader: RunReader, camera: str, topic: str | None) -> str | None:
    """The recorded image topic of ``camera`` with at least one frame, if any."""
    if topic is not None:
        if topic not in reader.topics:
            raise VideoError(f"run has no topic {topic!r}; it has {reader.topics}")
        return topic
    for t in reader.topics:
        if t.endswith(f"__{camera}") and reader.read_topic(t).table.num_rows:
            return t
    return None


def frame_time_ns(meta: dict[str, Any], recv_ns: int) -> int:
    """When a frame was made: its ``capture_ns`` (a camera's capture, a render's time), ``render_ns``, else the image
    ``stamp_ns``, else when the recorder received it (bursty under load)."""
    for key in ("capture_ns", "render_ns", "stamp_ns"):
        value = meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return recv_ns


def recorded_frames(reader: RunReader, topic: str) -> Iterator[tuple[int, np.ndarray]]:
    """(time ns, RGB image) of every recorded frame of an image topic."""
    from teledora.operators.contract.messages import MessageError, decode_image
    from teledora.operators.recording.message_check import image_problem

    for msg in reader.iter_topic(topic):
        meta = json.loads(msg.metadata) if msg.metadata else {}
        try:
            why = image_problem(msg.value, meta) if isinstance(meta, dict) else "metadata is no mapping"
            if why:  # decode_image alone lets negative sizes through to reshape
                raise MessageError(why)
            image = decode_image(msg.value, meta)
        except MessageError as exc:
            print(f"skipping frame seq {msg.seq}: {exc}", file=sys.stderr)
            continue
        if meta.get("encoding") == "bgr8":
            image = image[:, :, ::-1]
        elif meta.get("encoding") == "mono8":
            image = np.repeat(image, 3, axis=2)
        yield frame_time_ns(meta, msg.recv_ns), image


class _FrameCollector:
    """Stands in for the dora node when the renderer runs offline."""

    def __init__(self) -> None:
        self.frames: list[tuple[np.ndarray, dict[str, Any]]] = []

    def send_output(self, output: str, value: Any, metadata: dict[str, Any] | None = None) -> None:
        if output != "diagnostics":
            meta = metadata or {}
            image = value.to_numpy(zero_copy_only=False).reshape(meta["height"], meta["width"], 3)
            self.frames.append((image, meta))

    def log(self, level: str, message: str) -> None:
        if level in ("warn", "error"):
            print(f"renderer {level}: {message}", file=sys.stderr)


def rendered_frames(reader: RunReader, camera: str, fps: float, width: int, height: int) -> Iterator[tuple[int, np.ndarray]]:
    """Renders ``camera`` from the run's recorded states at ``fps`` (recording clock)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    from teledora import models
    from teledora.runtime.node_io import NodeIO
    from teledora.models.config_files import load_renderer_config
    from teledora.devices.rendering.camera_rig import CameraRig, resolve_model
    from teledora.devices.rendering.robot_renderer import RobotRenderer

    topics = reader.topics
    inputs = {name: _pick(topics, cands) for name, cands in STATE_TOPIC_SUFFIXES.items()}
    inputs = {k: v for k, v in inputs.items() if v is not None}
    if not inputs:
        raise VideoError(f"run has neither {camera} images nor recorded states; topics: {topics}")
    config = load_renderer_config()
    sources = dict(config.sources)
    fallback = {"arms": "joint_states", "lift": "lift", "base": "odom"}
    for group, own in fallback.items():
        if own not in inputs:
            if "ground_truth" not in inputs:
                raise VideoError(f"run has no state for {group} (no {own} topic, no ground truth)")
            sources[group] = "ground_truth"
    if "ground_truth" not in sources.values():
        inputs.pop("ground_truth", None)  # recorded, but not needed: feeding it would only be reported
    settings = dataclasses.replace(config.cameras[camera], enabled=True, rate_hz=fps, width=width, height=height)
    config = dataclasses.replace(config, sources=sources, cameras={camera: settings}, max_renders_per_cycle=1)
    rig = CameraRig(resolve_model(config.model.path), config, [settings])
    topic_input = {v: k for k, v in inputs.items()}
    messages = reader.iter_messages(list(inputs.values()))
    first = next(messages, None)
    if first is None:
        raise VideoError("the state topics are empty")
    now = [first.recv_ns]
    collector = _FrameCollector()
    io = NodeIO(collector, "video", clock=lambda: now[0])
    app = RobotRenderer(io, config, rig, models.load_profile())
    period = int(1e9 / fps)
    next_frame = first.recv_ns
    try:
        for msg in _chain(first, messages):
            while msg.recv_ns >= next_frame:  # frames due before this message show the pose so far
                now[0] = next_frame
                app.step(next_frame)
                yield from ((next_frame, img) for img, _ in collector.frames)
                collector.frames.clear()
                next_frame += period
            event = {"type": "INPUT", "id": topic_input[msg.topic], "value": msg.value, "metadata": replay_metadata(msg.metadata)}
            app.on_input(event)
        missing = app.pose.missing_groups()
        if missing:
            raise VideoError(f"the run never had a valid state for {missing}")
    finally:
        rig.close()


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def write_mp4(frames: Iterator[tuple[int, np.ndarray]], out: Path, fps: float | None) -> tuple[int, float]:
    """Writes timed RGB frames to an MP4 (mp4v) at a constant rate, so that the
    video plays in real time: each output frame shows the newest input frame
    made by then (repeated or skipped as needed). Without ``fps`` the rate is
    the median frame rate of the first 50 frames. Returns (frames written, fps)."""
    import cv2

    frames = iter(frames)
    head = []
    for item in frames:
        head.append(item)
        if len(head) >= 50:
            break
    if not head:
        raise VideoError("no frames to write")
    if fps is None:
        gaps = np.diff([t for t, _ in head])
        gaps = gaps[gaps > 0]
        fps = float(1e9 / np.median(gaps)) if len(gaps) else 10.0
    h, w = head[0][1].shape[:2]
    writer = cv2.VideoWriter(str(out), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    if not writer.isOpened():
        raise VideoError(f"OpenCV cannot write {out}")
    period = 1e9 / fps
    count = 0
    start = head[0][0]
    shown: np.ndarray | None = None
    try:
        for t, image in _chain_list(head, frames):
            if image.shape[:2] != (h, w):
                image = cv2.resize(image, (w, h))
            while shown is not None and start + count * period <= t - period / 2:
                writer.write(shown)  # the previous frame still shows until this one is due
                count += 1
            shown = np.ascontiguousarray(image[:, :, ::-1])
        if shown is not None:
            writer.write(shown)
            count += 1
    finally:
        writer.release()
    return count, fps


def _chain_list(head: list[Any], rest: Iterator[Any]) -> Iterator[Any]:
    yield from head
    yield from rest


def _needs_fresh_process() -> bool:
    """True when mujoco is already imported without a headless GL choice: its GL
    backend is fixed at import, so rendering must happen in a new process."""
    return (
        "mujoco" in sys.modules
        and not os.environ.get("MUJOCO_GL")
        and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    )


def _rerun_headless(args: argparse.Namespace) -> int:
    import subprocess

    argv = [sys.executable, "-m", "teledora.cli", "video", str(args.run), "--camera", args.camera, "--render",
            "--width", str(args.width), "--height", str(args.height)]
    if args.output:
        argv += ["-o", str(args.output)]
    if args.fps:
        argv += ["--fps", str(args.fps)]
    return subprocess.run(argv, env=dict(os.environ, MUJOCO_GL="egl")).returncode


def make_video(args: argparse.Namespace) -> int:
    try:
        reader = RunReader(args.run)
        topic = None if args.render else image_topic(reader, args.camera, args.topic)
        out = Path(args.output or Path(args.run) / f"{args.camera}.mp4")
        if topic is not None:
            frames = track(recorded_frames(reader, topic), f"writing {out.name}", recorded_total(reader.manifest, [topic]),
                           "frames")
            count, fps = write_mp4(frames, out, args.fps)
            how = f"from recorded topic {topic}"
        else:
            if _needs_fresh_process():
                return _rerun_headless(args)
            fps_render = args.fps or 15.0
            frames = rendered_frames(reader, args.camera, fps_render, args.width, args.height)
            count, fps = write_mp4(track(frames, f"rendering {out.name}", None, "frames"), out, fps_render)
            how = "rendered from recorded states"
    except (RecordingError, VideoError, KeyError) as exc:
        print(f"teledora video: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {out}: {count} frames at {fps:.1f} fps, {how}")
    return 0


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("video", help="MP4 of a camera from a recorded run", description=__doc__)
    p.add_argument("run", help="run directory written by the recorder")
    p.add_argument("--camera", default="chest", help="camera name (chest, top_front, top_back, left_wrist, right_wrist)")
    p.add_argument("--topic", help="image topic to use instead of <node>__<camera>")
    p.add_argument("-o", "--output", help="MP4 to write (default: RUN/<camera>.mp4)")
    p.add_argument("--fps", type=float, help="frame rate (default: the recorded rate, or 15 when rendering)")
    p.add_argument("--render", action="store_true", help="render from states even when images were recorded")
    p.add_argument("--width", type=int, default=640, help="width when rendering")
    p.add_argument("--height", type=int, default=480, help="height when rendering")
    p.set_defaults(func=make_video)
