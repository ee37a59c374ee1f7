"""Writing recorded runs as a LeRobotDataset (format v3.0), without LeRobot.

The layout written (docs/datasets.md)::

    ROOT/meta/info.json                      features, fps, totals, path templates
    ROOT/meta/tasks.parquet                  task text (index) -> task_index
    ROOT/meta/stats.json                     per-feature min/max/mean/std/count/quantiles
    ROOT/meta/episodes/chunk-CCC/file-FFF.parquet   one row per episode
    ROOT/data/chunk-CCC/file-FFF.parquet     one row per frame
    ROOT/videos/observation.images.<cam>/chunk-CCC/file-FFF.mp4

Each export call (one run) adds one data file, one episodes file and one video
file per camera, holding all of the run's kept episodes back to back; the
next call (``append``) continues the frame and episode numbering in the next
file index (a chunk holds ``chunks_size`` files). Which sample each frame holds
is :mod:`teledora.operators.datasets.frame_clock`'s rule; the names and units
are :mod:`teledora.operators.datasets.lerobot_features`'.

Camera images come either from a :class:`CameraRenderer` handed in (a sim
run's cameras rendered from its recorded states at each frame's own time, so
no frame repeats or lags), or from the recorded images, in which case the
report counts per episode and camera the frames that repeat an image and those
that had none (:mod:`teledora.operators.datasets.camera_frame_reuse`).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from teledora.operators.contract.messages import decode_image
from teledora.operators.datasets.camera_frame_reuse import frame_reuse
from teledora.operators.datasets.episodes import Episode, EpisodeMark, split_episodes
from teledora.operators.datasets.frame_clock import NS_PER_S, frame_times_ns, latest_at_or_before, sorted_order
from teledora.operators.datasets.lerobot_features import Units, arm_values, base_values, joint_map, lift_value, state_names
from teledora.operators.recording.message_check import IMAGE_KEYS, image_problem
from teledora.operators.errors import TeledoraError
from teledora.recording.run_reader import RunReader

CODEBASE_VERSION = "v3.0"
CHUNKS_SIZE = 1000
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
EPISODES_PATH = "meta/episodes/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)
IMAGE_STATS_FRAMES = 100  # frames per camera and episode sampled for image statistics

# Where each stream comes from: (node, output) candidates, first present wins.
ARM_STATE_SOURCES = [("arms", "joint_states")]
ARM_ACTION_SOURCES = [("arms", "servo_targets"), ("teleop", "joint_commands")]
LIFT_STATE_SOURCES = [("lift", "state")]
BASE_STATE_SOURCES = [("base", "odom")]
BASE_ACTION_SOURCES = [("teleop", "base_cmd")]
LIFT_ACTION_SOURCES = [("teleop", "lift_cmd")]
EPISODE_SOURCES = [("episodes", "marks")]


class ExportError(TeledoraError):
    """The run cannot be exported as asked (a stream is missing, the dataset differs)."""


class CameraRenderer(Protocol):
    """Camera images made on demand for any instant of the run (a sim run's
    cameras rendered from its recorded states)."""

    cameras: dict[str, tuple[int, int]]  # camera -> (width, height)
    start_ns: int  # the first time every state the images need is known

    def render(self, t_ns: int, cameras: Iterable[str] | None = None) -> dict[str, np.ndarray]: ...


def is_sim_run(reader: RunReader) -> bool:
    """True when the run recorded the sim node (it exists only in the sim
    dataflows): its cameras can be rendered again from the recorded states."""
    return any(node == "sim" for node, _ in reader.sources().values())


@dataclass(frozen=True)
class ExportOptions:
    fps: int
    default_task: str
    robot_type: str
    units: Units
    lift_travel_mm: float
    vcodec: str = "libsvtav1"
    crf: int = 30
    gop: int = 2


@dataclass
class ExportReport:
    root: Path
    episodes: list[dict[str, Any]] = field(default_factory=list)
    discarded: int = 0
    ignored_marks: int = 0
    frames: int = 0
    recording_s: float = 0.0
    seconds: float = 0.0
    cameras: list[str] = field(default_factory=list)
    whole_run: bool = False
    skipped_frames: dict[str, tuple[int, str]] = field(default_factory=dict)  # camera -> (count, first reason)
    rendered: bool = False  # camera images rendered at each frame's time, not taken from the recording
    render_frames: int = 0
    render_s: float = 0.0
    # recorded images only: per episode and camera, frames that repeat an image or had none
    frame_reuse: list[dict[str, Any]] = field(default_factory=list)

    @property
    def render_frames_per_s(self) -> float:
        return self.render_frames / self.render_s if self.render_s > 0 else 0.0


# --------------------------------------------------------------------------- streams


@dataclass
class Stream:
    """One recorded topic: send times (sorted) and its rows' values in that order."""

    topic: str
    times: np.ndarray
    values: pa.Array | pa.ChunkedArray  # one entry per row, in ``times`` order


def _find_topic(reader: RunReader, candidates: list[tuple[str, str]]) -> str | None:
    sources = reader.sources()
    for want in candidates:
        for topic, src in sorted(sources.items()):
            if src == want:
                return topic
    return None


def _load_stream(reader: RunReader, topic: str, table: pa.Table | None = None) -> Stream:
    table = reader.read_topic(topic).table if table is None else table
    dora = table.column("dora_ns").to_pylist()
    recv = table.column("recv_ns").to_pylist()
    times = np.array([d if d is not None else r for d, r in zip(dora, recv)], dtype=np.int64)
    order = sorted_order(times)
    values = table.column("value")
    if np.any(order != np.arange(len(order))):  # rarely: out of order at the recorder
        values = values.take(pa.array(order))
    return Stream(topic, times[order], values)


def _struct_rows(values: pa.Array, idx: np.ndarray) -> list[dict[str, Any]]:
    sub = values.take(pa.array(idx))
    flat = pc.list_element(sub, 0)
    return flat.to_pylist()


def _require(reader: RunReader, candidates: list[tuple[str, str]], what: str) -> Stream:
    topic = _find_topic(reader, candidates)
    if topic is None:
        names = " or ".join(f"{n}/{o}" for n, o in candidates)
        raise ExportError(f"{reader.run_dir}: no {what} stream ({names}) recorded")
    stream = _load_stream(reader, topic)
    if len(stream.times) == 0:
        raise ExportError(f"{reader.run_dir}: {topic} ({what}) holds no readable messages")
    return stream


def camera_topics(reader: RunReader) -> dict[str, str]:
    """camera name -> topic, for every topic whose first message is an image."""
    out: dict[str, str] = {}
    for topic in reader.topics:
        table = reader.read_topic(topic).table
        if table.num_rows == 0:
            continue
        meta = json.loads(table.column("metadata")[0].as_py() or "{}")
        if {"width", "height", "encoding"} <= set(meta):
            camera = str(meta.get("camera") or reader.sources()[topic][1])
            out[camera] = topic
    return dict(sorted(out.items()))


def episode_marks(reader: RunReader) -> list[EpisodeMark]:
    """The operator's episode marks (recorded from episodes/marks)."""
    marks: list[EpisodeMark] = []
    for topic, source in reader.sources().items():
        if source not in EPISODE_SOURCES:
            continue
        stream = _load_stream(reader, topic)
        rows = _struct_rows(stream.values, np.arange(len(stream.times)))
        for t, row in zip(stream.times, rows):
            marks.append(EpisodeMark(int(t), str(row.get("event", "")), str(row.get("task") or "")))
    return marks


# --------------------------------------------------------------------------- frames


@dataclass
class EpisodeFrames:
    episode: Episode
    times: np.ndarray  # frame times (ns)
    state: np.ndarray  # (n, 18) float32
    action: np.ndarray  # (n, 18) float32
    images: dict[str, np.ndarray]  # camera -> row index (into its stream) per frame
    reuse: dict[str, Any] = field(default_factory=dict)  # camera -> FrameReuse (recorded images)


def _arm_matrix(stream: Stream, idx: np.ndarray, field_name: str, units: Units) -> np.ndarray:
    rows = _struct_rows(stream.values, idx)
    out = np.empty((len(idx), 14), dtype=np.float64)
    for k, row in enumerate(rows):
        try:
            out[k] = arm_values(joint_map(row["names"], row[field_name]), units)
        except KeyError as exc:
            raise ExportError(f"{stream.topic}: joint {exc.args[0]} missing from a message") from None
    return out


def frames_for(episode: Episode, streams: dict[str, Stream], cameras: dict[str, Stream], opts: ExportOptions,
               rendered_from_ns: int | None = None) -> EpisodeFrames:
    """The episode's frames; with ``rendered_from_ns`` the cameras are rendered,
    and a frame needs its time to be at or after it instead of a recorded image."""
    times = frame_times_ns(episode.start_ns, episode.end_ns, opts.fps)
    period = NS_PER_S // opts.fps
    obs_idx = {k: latest_at_or_before(s.times, times) for k, s in streams.items() if not k.startswith("act_")}
    act_idx = {k: latest_at_or_before(s.times, times + period) for k, s in streams.items() if k.startswith("act_")}
    cam_idx = {c: latest_at_or_before(s.times, times) for c, s in cameras.items()}
    ok = np.ones(len(times), dtype=bool)
    for idx in [*obs_idx.values(), *act_idx.values(), *cam_idx.values()]:
        ok &= idx >= 0
    if rendered_from_ns is not None:
        ok &= times >= rendered_from_ns
    keep = np.flatnonzero(ok)
    first = int(keep[0]) if keep.size else len(times)
    reuse = {c: frame_reuse(idx, first) for c, idx in cam_idx.items()}
    if keep.size:
        keep = np.arange(keep[0], len(times))  # every stream has begun: keep the rest of the episode
    times = times[keep]
    obs_idx = {k: v[keep] for k, v in obs_idx.items()}
    act_idx = {k: v[keep] for k, v in act_idx.items()}
    cam_idx = {k: v[keep] for k, v in cam_idx.items()}
    n = len(times)
    if n == 0:
        z = np.zeros((0, len(state_names())), dtype=np.float32)
        return EpisodeFrames(episode, times, z, z.copy(), cam_idx, reuse)

    arms = _arm_matrix(streams["arms"], obs_idx["arms"], "position", opts.units)
    odom = _struct_rows(streams["base"].values, obs_idx["base"])
    base = np.array([base_values(r["vx"], r["vy"], r["wz"]) for r in odom], dtype=np.float64)
    lift_rows = _struct_rows(streams["lift"].values, obs_idx["lift"])
    lift = np.array([[lift_value(r["height_m"])] for r in lift_rows], dtype=np.float64)
    state = np.hstack([arms, base, lift]).astype(np.float32)

    act_arms = _arm_matrix(streams["act_arms"], act_idx["act_arms"], "q_ref", opts.units)
    cmd = _struct_rows(streams["act_base"].values, act_idx["act_base"])
    act_base = np.array([base_values(r["forward_m_s"], r["left_m_s"], r["yaw_rad_s"]) for r in cmd], dtype=np.float64)
    lift_cmd = _struct_rows(streams["act_lift"].values, act_idx["act_lift"])
    # The lift is commanded by velocity; as a height (the upstream action key) the
    # action is where that velocity takes the measured height by the next frame.
    target = lift[:, 0] + np.array([r["velocity_m_s"] for r in lift_cmd]) * 1000.0 / opts.fps
    act_lift = np.clip(target, 0.0, opts.lift_travel_mm)[:, None]
    action = np.hstack([act_arms, act_base, act_lift]).astype(np.float32)
    return EpisodeFrames(episode, times, state, action, cam_idx, reuse)


# --------------------------------------------------------------------------- images and video


def rgb_image(values: pa.Array, i: int, meta: dict[str, Any]) -> np.ndarray:
    """Row ``i`` of an image stream as an (H, W, 3) RGB uint8 array."""
    img = decode_image(values[i].values, meta)
    enc = meta["encoding"]
    if enc == "mono8" or img.shape[2] == 1:
        return np.repeat(img.reshape(img.shape[0], img.shape[1], 1), 3, axis=2)
    return img[:, :, ::-1] if enc == "bgr8" else img


def _row_metadata(text: str | None) -> dict[str, Any]:
    try:
        meta = json.loads(text or "{}")
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


@dataclass
class CameraFrames:
    """A camera's frames that can go into its video, and those that cannot."""

    stream: Stream
    meta: dict[str, Any]  # of its first good frame: the video's size and encoding
    skipped: int = 0
    first_skip: str = ""


def load_camera(reader: RunReader, topic: str) -> CameraFrames:
    """The frames of an image topic that are valid images of the camera's one
    size and encoding (its first valid frame's); the others are skipped and
    counted, so that one bad frame cannot end an export.

    Raises:
        ExportError: no frame of the topic is a valid image."""
    table = reader.read_topic(topic).table
    values = table.column("value")
    keep: list[bool] = []
    ref: tuple[Any, ...] | None = None
    meta0: dict[str, Any] = {}
    skipped, first = 0, ""
    for i, text in enumerate(table.column("metadata").to_pylist()):
        meta = _row_metadata(text)
        why = image_problem(values[i].values, meta) if any(k in meta for k in IMAGE_KEYS) else "no image metadata"
        if not why:
            shape = (meta["width"], meta["height"], meta["encoding"])
            if ref is None:
                ref, meta0 = shape, meta
            elif shape != ref:
                why = f"{shape[0]}x{shape[1]} {shape[2]}, the camera's first frame is {ref[0]}x{ref[1]} {ref[2]}"
        if why:
            skipped += 1
            first = first or f"row {i}: {why}"
        keep.append(not why)
    if ref is None:
        raise ExportError(f"{reader.run_dir}: {topic} holds no valid image ({first or 'no frames'})")
    stream = _load_stream(reader, topic, table.filter(pa.array(keep, pa.bool_())) if skipped else table)
    return CameraFrames(stream, meta0, skipped, first)


class VideoWriter:
    """One camera's video file: frames at ``fps``, pts = frame number."""

    def __init__(self, path: Path, width: int, height: int, opts: ExportOptions) -> None:
        import os
        from fractions import Fraction

        import av

        os.environ.setdefault("SVT_LOG", "1")  # SVT-AV1 prints its whole configuration otherwise

        path.parent.mkdir(parents=True, exist_ok=True)
        self.container = av.open(str(path), mode="w")
        self.stream = self.container.add_stream(opts.vcodec, rate=opts.fps)
        self.stream.width, self.stream.height = width, height
        self.stream.pix_fmt = "yuv420p"
        self.stream.time_base = Fraction(1, opts.fps)
        options = {"g": str(opts.gop), "crf": str(opts.crf)}
        if opts.vcodec == "libsvtav1":
            options["preset"] = "10"
        elif opts.vcodec == "libx264":
            options["preset"] = "veryfast"
        self.stream.options = options
        self.frames = 0
        self._av = av

    def write(self, img: np.ndarray) -> None:
        frame = self._av.VideoFrame.from_ndarray(np.ascontiguousarray(img), format="rgb24")
        frame.pts = self.frames
        for packet in self.stream.encode(frame):
            self.container.mux(packet)
        self.frames += 1

    def close(self) -> None:
        for packet in self.stream.encode():
            self.container.mux(packet)
        self.container.close()


# --------------------------------------------------------------------------- stats


def vector_stats(x: np.ndarray) -> dict[str, Any]:
    x = np.asarray(x, dtype=np.float64)
    out = {
        "min": x.min(axis=0), "max": x.max(axis=0), "mean": x.mean(axis=0), "std": x.std(axis=0),
        "count": np.array([len(x)]),
    }
    for q in QUANTILES:
        out[f"q{int(q * 100):02d}"] = np.quantile(x, q, axis=0)
    return out


def image_stats(frames: np.ndarray) -> dict[str, Any]:
    """Per-channel stats of (N, H, W, 3) uint8 frames, in [0, 1], shaped (3, 1, 1) as LeRobot keeps them.

    Images wider than about 160 pixels are subsampled (every k-th pixel) first,
    as LeRobot does for speed."""
    step = max(1, frames.shape[2] // 160)
    per = frames[:, ::step, ::step, :].reshape(-1, 3).T.astype(np.float32) / 255.0
    out = {
        "min": per.min(axis=1), "max": per.max(axis=1), "mean": per.mean(axis=1, dtype=np.float64),
        "std": per.std(axis=1, dtype=np.float64), "count": np.array([len(frames)]),
    }
    qs = np.quantile(per, QUANTILES, axis=1)
    for q, row in zip(QUANTILES, qs):
        out[f"q{int(q * 100):02d}"] = row
    return {k: (v if k == "count" else np.asarray(v, dtype=np.float64).reshape(3, 1, 1)) for k, v in out.items()}


def merge_stats(a: dict[str, Any] | None, b: dict[str, Any]) -> dict[str, Any]:
    """Pooled min/max/mean/std/count of two sets; quantiles are count-weighted
    averages (an approximation, as LeRobot's own aggregation makes)."""
    if a is None:
        return b
    na, nb = float(np.asarray(a["count"]).sum()), float(np.asarray(b["count"]).sum())
    ma, mb = np.asarray(a["mean"]), np.asarray(b["mean"])
    n = na + nb
    mean = (na * ma + nb * mb) / n
    var = (na * (np.asarray(a["std"]) ** 2 + (ma - mean) ** 2) + nb * (np.asarray(b["std"]) ** 2 + (mb - mean) ** 2)) / n
    out = {
        "min": np.minimum(a["min"], b["min"]), "max": np.maximum(a["max"], b["max"]), "mean": mean,
        "std": np.sqrt(var), "count": np.array([int(n)]),
    }
    for key in b:
        if key.startswith("q") and key in a:
            out[key] = (na * np.asarray(a[key]) + nb * np.asarray(b[key])) / n
    return out


def _jsonable(stats: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f: {k: np.asarray(v).tolist() for k, v in s.items()} for f, s in stats.items()}


# --------------------------------------------------------------------------- dataset files


def _features(names: list[str], cameras: dict[str, dict[str, Any]], opts: ExportOptions) -> dict[str, Any]:
    feats: dict[str, Any] = {
        "observation.state": {"dtype": "float32", "shape": [len(names)], "names": names},
        "action": {"dtype": "float32", "shape": [len(names)], "names": names},
    }
    for cam, meta in cameras.items():
        h, w = int(meta["height"]), int(meta["width"])
        feats[f"observation.images.{cam}"] = {
            "dtype": "video",
            "shape": [h, w, 3],
            "names": ["height", "width", "channels"],
            "info": {
                "video.height": h, "video.width": w, "video.codec": _codec_name(opts.vcodec),
                "video.pix_fmt": "yuv420p", "video.is_depth_map": False, "video.fps": opts.fps,
                "video.channels": 3, "has_audio": False,
            },
        }
    for key, dtype in (("timestamp", "float32"), ("frame_index", "int64"), ("episode_index", "int64"),
                       ("index", "int64"), ("task_index", "int64")):
        feats[key] = {"dtype": dtype, "shape": [1], "names": None}
    return feats


def _codec_name(vcodec: str) -> str:
    return {"libsvtav1": "av1", "libaom-av1": "av1", "libx264": "h264", "libx265": "hevc"}.get(vcodec, vcodec)


def _next_file(chunk: int, file: int) -> tuple[int, int]:
    return (chunk + 1, 0) if file == CHUNKS_SIZE - 1 else (chunk, file + 1)


def _write_tasks(root: Path, tasks: list[str]) -> None:
    """meta/tasks.parquet: the task text as the (pandas) index, ``task_index`` as the column."""
    table = pa.table({"task_index": pa.array(range(len(tasks)), pa.int64()), "task": pa.array(tasks, pa.string())})
    pandas_meta = {
        "index_columns": ["task"],
        "column_indexes": [],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": None},
            {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object", "metadata": None},
        ],
        "creator": {"library": "pyarrow", "version": pa.__version__},
        "pandas_version": "2.2.0",
    }
    table = table.replace_schema_metadata({b"pandas": json.dumps(pandas_meta).encode()})
    (root / "meta").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, root / "meta" / "tasks.parquet")


def _read_tasks(root: Path) -> list[str]:
    path = root / "meta" / "tasks.parquet"
    if not path.exists():
        return []
    t = pq.read_table(path)
    pairs = sorted(zip(t.column("task_index").to_pylist(), t.column("task").to_pylist()))
    return [task for _, task in pairs]


@dataclass
class DatasetState:
    """What an existing dataset's meta says (to append after it)."""

    info: dict[str, Any]
    tasks: list[str]
    stats: dict[str, Any] | None
    next_file: tuple[int, int]


def read_dataset_state(root: Path) -> DatasetState | None:
    info_path = root / "meta" / "info.json"
    if not info_path.exists():
        return None
    info = json.loads(info_path.read_text())
    if info.get("codebase_version") != CODEBASE_VERSION:
        raise ExportError(f"{root}: dataset format {info.get('codebase_version')}, can only append to {CODEBASE_VERSION}")
    stats_path = root / "meta" / "stats.json"
    stats = json.loads(stats_path.read_text()) if stats_path.exists() else None
    last = (-1, -1)
    for p in (root / "meta" / "episodes").glob("chunk-*/file-*.parquet"):
        last = max(last, (int(p.parent.name[6:]), int(p.stem[5:])))
    nxt = (0, 0) if last == (-1, -1) else _next_file(*last)
    return DatasetState(info, _read_tasks(root), stats, nxt)


def export_run(
    run_dir: Path,
    root: Path,
    opts: ExportOptions,
    *,
    append: bool,
    progress: Callable[[str], None] = lambda line: None,
    advance: Callable[[int, int], None] | None = None,
    renderer: CameraRenderer | None = None,
) -> ExportReport:
    """Exports one run into the dataset at ``root`` (created, or appended to).
    ``progress`` gets a line now and then; ``advance`` gets ``(1, total)`` for
    each video frame encoded, ``total`` being the frames of all cameras. With
    a ``renderer`` the videos hold its images at each frame's time (its
    cameras, in place of any recorded images); without, the recorded images."""
    t_start = time.perf_counter()
    reader = RunReader(run_dir)
    state_before = read_dataset_state(root)
    if state_before is not None and not append:
        raise ExportError(f"{root} already holds a dataset; pass --append to add this run to it")
    if state_before is None and root.exists() and any(root.iterdir()):
        raise ExportError(f"{root} exists and is not a LeRobot dataset; choose an empty or new directory")

    streams = {
        "arms": _require(reader, ARM_STATE_SOURCES, "arm joint state"),
        "lift": _require(reader, LIFT_STATE_SOURCES, "lift state"),
        "base": _require(reader, BASE_STATE_SOURCES, "base odometry"),
        "act_arms": _require(reader, ARM_ACTION_SOURCES, "arm command"),
        "act_base": _require(reader, BASE_ACTION_SOURCES, "base command"),
        "act_lift": _require(reader, LIFT_ACTION_SOURCES, "lift command"),
    }
    if renderer is None:
        cam_frames = {c: load_camera(reader, t) for c, t in camera_topics(reader).items()}
        cam_meta = {c: f.meta for c, f in cam_frames.items()}
        cameras = {c: f.stream for c, f in cam_frames.items()}
        camera_names = list(cameras)
    else:
        cam_frames = {}
        cam_meta = {c: {"width": w, "height": h} for c, (w, h) in sorted(renderer.cameras.items())}
        cameras = {}
        camera_names = list(cam_meta)

    names = state_names()
    features = _features(names, cam_meta, opts)
    if state_before is not None:
        old = state_before.info
        if old.get("fps") != opts.fps:
            raise ExportError(f"{root} is at {old.get('fps')} fps, this export at {opts.fps}; use --fps {old.get('fps')}")
        if json.dumps(old.get("features"), sort_keys=True) != json.dumps(features, sort_keys=True):
            raise ExportError(f"{root} has other features (cameras, image sizes, codec or names) than this run")

    all_times = np.concatenate([s.times for s in [*streams.values(), *cameras.values()]])
    run_start, run_end = int(all_times.min()), int(all_times.max())
    split = split_episodes(episode_marks(reader), run_start, run_end, opts.default_task)
    report = ExportReport(root, discarded=len(split.discarded), ignored_marks=len(split.ignored),
                          cameras=camera_names, whole_run=bool(split.episodes) and split.episodes[0].closed_by == "whole run",
                          skipped_frames={c: (f.skipped, f.first_skip) for c, f in cam_frames.items() if f.skipped},
                          rendered=renderer is not None)

    rendered_from = renderer.start_ns if renderer is not None else None
    eps = [frames_for(ep, streams, cameras, opts, rendered_from) for ep in split.episodes]
    eps = [e for e in eps if len(e.times)]
    if not eps:
        raise ExportError(f"{run_dir}: no episode holds a frame with every stream present")

    tasks = list(state_before.tasks) if state_before else []
    for e in eps:
        if e.episode.task not in tasks:
            tasks.append(e.episode.task)
    chunk, file = state_before.next_file if state_before else (0, 0)
    ep_base = int(state_before.info["total_episodes"]) if state_before else 0
    frame_base = int(state_before.info["total_frames"]) if state_before else 0
    total = sum(len(e.times) for e in eps)

    # videos: one file per camera for this run's episodes, back to back; every
    # camera is written at each frame, so a renderer poses the model once per frame
    video_ranges: dict[str, list[tuple[float, float]]] = {c: [] for c in camera_names}
    writers = {c: VideoWriter(root / VIDEO_PATH.format(video_key=f"observation.images.{c}", chunk_index=chunk, file_index=file),
                              int(m["width"]), int(m["height"]), opts) for c, m in cam_meta.items()}
    samples: dict[str, list[np.ndarray]] = {c: [] for c in camera_names}
    subs = {c: max(1, int(m["width"]) // 160) for c, m in cam_meta.items()}  # statistics on images about 160 pixels across
    done, all_frames = 0, total * len(camera_names)
    last_report = time.perf_counter()
    render_s = 0.0
    try:
        for j, e in enumerate(eps):
            starts = {c: writers[c].frames / opts.fps for c in camera_names}
            pick = set(np.linspace(0, len(e.times) - 1, min(IMAGE_STATS_FRAMES, len(e.times))).astype(int).tolist())
            cache: dict[str, tuple[int, np.ndarray]] = {}
            for k, t in enumerate(e.times):
                if renderer is not None:
                    t0 = time.perf_counter()
                    images = renderer.render(int(t), camera_names)
                    render_s += time.perf_counter() - t0
                else:
                    images = {}
                    for cam in camera_names:
                        row = int(e.images[cam][k])
                        if cache.get(cam, (-1, None))[0] != row:
                            cache[cam] = (row, rgb_image(cameras[cam].values, row, cam_meta[cam]))
                        images[cam] = cache[cam][1]
                for cam in camera_names:
                    writers[cam].write(images[cam])
                    if k in pick:
                        samples[cam].append(images[cam][::subs[cam], ::subs[cam]])
                    done += 1
                    if advance is not None:
                        advance(1, all_frames)
                if time.perf_counter() - last_report > 2.0:
                    progress(f"{'rendering and ' if renderer is not None else ''}encoding {len(camera_names)} camera(s): "
                             f"{done}/{all_frames} frames ({100 * done // max(1, all_frames)}%)")
                    last_report = time.perf_counter()
            for cam in camera_names:
                video_ranges[cam].append((starts[cam], writers[cam].frames / opts.fps))
            if renderer is None:
                for cam in camera_names:
                    r = e.reuse[cam]
                    report.frame_reuse.append({"episode_index": ep_base + j, "camera": cam, "frames": r.frames,
                                               "repeated": r.repeated, "missing": r.missing, "unused": r.unused})
    finally:
        for writer in writers.values():
            writer.close()
    stats: dict[str, Any] = {}
    for cam in camera_names:
        key = f"observation.images.{cam}"
        progress(f"encoded {key}: {writers[cam].frames} frames")
        stats[key] = image_stats(np.stack(samples[cam]))
    report.render_frames = done if renderer is not None else 0
    report.render_s = render_s

    # data
    cols: dict[str, list[Any]] = {k: [] for k in ("observation.state", "action", "timestamp", "frame_index",
                                                   "episode_index", "index", "task_index")}
    index = frame_base
    ep_rows: list[dict[str, Any]] = []
    for j, e in enumerate(eps):
        n = len(e.times)
        ep_idx = ep_base + j
        cols["observation.state"].append(e.state)
        cols["action"].append(e.action)
        cols["timestamp"].append((np.arange(n) / opts.fps).astype(np.float32))
        cols["frame_index"].append(np.arange(n, dtype=np.int64))
        cols["episode_index"].append(np.full(n, ep_idx, dtype=np.int64))
        cols["index"].append(np.arange(index, index + n, dtype=np.int64))
        cols["task_index"].append(np.full(n, tasks.index(e.episode.task), dtype=np.int64))
        row: dict[str, Any] = {
            "episode_index": ep_idx, "tasks": [e.episode.task], "length": n,
            "data/chunk_index": chunk, "data/file_index": file,
            "dataset_from_index": index, "dataset_to_index": index + n,
        }
        for cam in camera_names:
            key = f"observation.images.{cam}"
            row[f"videos/{key}/chunk_index"] = chunk
            row[f"videos/{key}/file_index"] = file
            row[f"videos/{key}/from_timestamp"] = video_ranges[cam][j][0]
            row[f"videos/{key}/to_timestamp"] = video_ranges[cam][j][1]
        row["meta/episodes/chunk_index"] = chunk
        row["meta/episodes/file_index"] = file
        row["teledora/run"] = str(run_dir.resolve().name)
        row["teledora/start_ns"] = int(e.times[0])
        row["teledora/closed_by"] = e.episode.closed_by
        ep_rows.append(row)
        report.episodes.append({"episode_index": ep_idx, "task": e.episode.task, "frames": n,
                                "closed_by": e.episode.closed_by, "start_ns": int(e.times[0])})
        index += n
    width = len(names)
    state = np.concatenate(cols["observation.state"])
    action = np.concatenate(cols["action"])
    data = pa.table({
        "observation.state": pa.FixedSizeListArray.from_arrays(pa.array(state.reshape(-1), pa.float32()), width),
        "action": pa.FixedSizeListArray.from_arrays(pa.array(action.reshape(-1), pa.float32()), width),
        **{k: pa.array(np.concatenate(cols[k])) for k in ("timestamp", "frame_index", "episode_index", "index", "task_index")},
    })
    data_path = root / DATA_PATH.format(chunk_index=chunk, file_index=file)
    data_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(data, data_path)
    stats["observation.state"] = vector_stats(state)
    stats["action"] = vector_stats(action)
    for k in ("timestamp", "frame_index", "episode_index", "index", "task_index"):
        stats[k] = vector_stats(np.concatenate(cols[k]).reshape(-1, 1))

    ep_path = root / EPISODES_PATH.format(chunk_index=chunk, file_index=file)
    ep_path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(ep_rows), ep_path)
    _write_tasks(root, tasks)

    old_stats = state_before.stats if state_before else None
    merged = {f: merge_stats(None if old_stats is None else old_stats.get(f), s) for f, s in stats.items()}
    (root / "meta" / "stats.json").write_text(json.dumps(_jsonable(merged), indent=2))

    info = {
        "codebase_version": CODEBASE_VERSION,
        "robot_type": opts.robot_type,
        "total_episodes": ep_base + len(eps),
        "total_frames": frame_base + total,
        "total_tasks": len(tasks),
        "chunks_size": CHUNKS_SIZE,
        "data_files_size_in_mb": 100,
        "video_files_size_in_mb": 200,
        "fps": opts.fps,
        "splits": {"train": f"0:{ep_base + len(eps)}"},
        "data_path": DATA_PATH,
        "video_path": VIDEO_PATH if camera_names else None,
        "features": features,
    }
    (root / "meta" / "info.json").write_text(json.dumps(info, indent=4))
    report.frames = total
    report.recording_s = total / opts.fps
    report.seconds = time.perf_counter() - t_start
    return report
