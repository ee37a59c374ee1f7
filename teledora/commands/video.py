"""`teledora video RUN --camera chest`: an MP4 of one camera from a recorded run.

A sim run's camera is rendered again from the recorded states (the sim's
ground truth, else ``arms__joint_states``, ``lift__state``, ``base__odom``;
and the objects' poses) at exactly ``--fps``: frame k shows the states
interpolated at ``start + k / fps``, however slowly the live camera ran
(``--recorded`` writes the recorded images instead). Other runs write the
camera's recorded images (a topic ``<node>__<camera>``) as they are, or render
it from the recorded states where there are none (or with ``--render``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from teledora.commands._progress import recorded_total, track
from teledora.operators.errors import TeledoraError
from teledora.recording import RecordingError, RunReader
from teledora.recording.lerobot_export import is_sim_run


class VideoError(TeledoraError, RuntimeError):
    """The run cannot give a video of the requested camera."""


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


def rendered_frames(
    reader: RunReader, camera: str, fps: float, width: int, height: int
) -> tuple[int, Iterator[tuple[int, np.ndarray]], Any]:
    """Renders ``camera`` from the run's recorded states (the sim's ground truth
    where recorded, else the arms', lift's and base's reports, and the objects'
    poses) at exactly ``start + k / fps``, each frame posed by the states
    interpolated at its time. Returns (frames, their iterator, the renderer)."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    from teledora import models
    from teledora.devices.rendering.offline_render import OfflineRenderError, RecordedStateRenderer
    from teledora.models.config_files import load_renderer_config
    from teledora.operators.datasets.frame_clock import frame_times_ns

    try:
        renderer = RecordedStateRenderer(reader, load_renderer_config(), models.load_profile(), cameras=[camera],
                                         size=(width, height))
    except OfflineRenderError as exc:
        raise VideoError(str(exc)) from None
    times = frame_times_ns(renderer.start_ns, renderer.end_ns, fps)

    def frames() -> Iterator[tuple[int, np.ndarray]]:
        try:
            for t in times:
                yield int(t), renderer.render(int(t))[camera]
        finally:
            renderer.close()

    return len(times), frames(), renderer


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
        # a sim run's cameras are rendered again at an exact frame clock unless its images are asked for
        render = args.render or (is_sim_run(reader) and not args.recorded and args.topic is None)
        topic = None if render else image_topic(reader, args.camera, args.topic)
        out = Path(args.output or Path(args.run) / f"{args.camera}.mp4")
        if topic is not None:
            frames = track(recorded_frames(reader, topic), f"writing {out.name}", recorded_total(reader.manifest, [topic]),
                           "frames")
            count, fps = write_mp4(frames, out, args.fps)
            how = f"from recorded topic {topic}"
        else:
            if _needs_fresh_process():
                return _rerun_headless(args)
            fps_render = args.fps or 30.0
            total, frames, renderer = rendered_frames(reader, args.camera, fps_render, args.width, args.height)
            count, fps = write_mp4(track(frames, f"rendering {out.name}", total, "frames"), out, fps_render)
            how = (f"rendered from recorded states at each frame's time "
                   f"({renderer.frames_per_s:.1f} frames/s rendering")
            how += f"; {renderer.rejected} recorded state(s) rejected, first: {renderer.first_rejection})" \
                if renderer.rejected else ")"
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
    p.add_argument("--fps", type=float, help="frame rate (default: the recorded rate, or 30 when rendering)")
    p.add_argument("--render", action="store_true", help="render from states even when images were recorded")
    p.add_argument("--recorded", action="store_true",
                   help="a sim run: its recorded images instead of rendering the camera again (the default there)")
    p.add_argument("--width", type=int, default=640, help="width when rendering")
    p.add_argument("--height", type=int, default=480, help="height when rendering")
    p.set_defaults(func=make_video)
