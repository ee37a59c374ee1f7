"""A recorded run as an MCAP file that Foxglove opens in its 3D panel.

Two kinds of channel, side by side:

* **3D channels**, Protobuf-encoded with the ``foxglove.*`` schemas of
  ``foxglove-sdk`` (what Foxglove's panels draw):

  ===================================  ===========================  ===========================================
  channel                              schema                       from
  ===================================  ===========================  ===========================================
  ``/tf``                              foxglove.FrameTransforms     world → odom (identity, at the start),
                                                                    odom → base_link (each base odometry),
                                                                    every body, site and camera below base_link
                                                                    (each joint state and lift state)
  ``/foxglove/robot``                  foxglove.SceneUpdate         the robot model's geoms, one entity per body
  ``/foxglove/room``                   foxglove.SceneUpdate         the scene's fixed geoms (floor, walls, obstacles)
  ``/foxglove/<node>/<output>``        foxglove.LaserScan           every LaserScan topic, in its own frame
  ``/foxglove/<node>/<output>``        foxglove.PoseInFrame         Odometry, PoseEstimate, MocapPose, GroundTruth
  ``/foxglove/<node>/<output>/path``   foxglove.PosesInFrame        the same poses so far (every 0.1 s), twice a second
  ``/foxglove/<node>/<output>``        foxglove.CompressedImage     every image, JPEG: a recorded JPEG frame's
                                                                    own bytes, a raw frame encoded here
  ``/foxglove/<node>/<output>/calib``  foxglove.CameraCalibration   the same image's fx, fy, cx, cy
  ===================================  ===========================  ===========================================

  Protobuf keeps IEEE doubles as they are, so scan ranges stay +Inf (no
  return), -Inf (too close) and NaN (invalid), and timestamps are seconds
  plus nanoseconds, exact.

* **Plain-data channels** ``/<node>/<output>``: every recorded message as JSON
  with a JSON Schema derived from its Arrow type (raw images as
  ``foxglove.RawImage``, Protobuf, lossless; a JPEG frame has no plain
  channel, since its CompressedImage above already holds its bytes unchanged). JSON numbers are doubles in
  JavaScript, so integer fields named ``*_ns`` (nanosecond stamps, ~1.8e18 >
  2^53) are written as decimal strings, and a message with a ``stamp_ns``
  also gets ``timestamp: {sec, nsec}``. JSON has no Inf or NaN: non-finite
  floats are written as the strings ``"inf"``, ``"-inf"`` and ``"nan"``.

Which frames and which transforms come from which messages is decided in
:mod:`teledora.operators.scene`; this module only writes the file.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import numpy as np
import pyarrow as pa

from teledora.operators.contract.compressed_image import COMPRESSED_ENCODINGS, as_bytes
from teledora.operators.contract.messages import IMAGE_ENCODINGS, SCHEMAS, MessageError, decode
from teledora.operators.model.robot_profile import RobotProfile
from teledora.operators.recording.message_check import IMAGE_KEYS, image_problem
from teledora.operators.scene.message_poses import POSE_KINDS, FramedPose, camera_intrinsics, odom_transform, pose_of, scan_of
from teledora.operators.scene.model_geometry import BodyShapes, Primitive, body_shapes
from teledora.operators.scene.robot_frames import RobotFrames, Transform, identity
from teledora.recording.run_reader import RecordedMessage, RunReader
from teledora.recording.run_timing import message_time_ns

NS = 1_000_000_000
TF_TOPIC = "/tf"
ROBOT_TOPIC = "/foxglove/robot"
ROOM_TOPIC = "/foxglove/room"
PATH_POSE_PERIOD_NS = NS // 10  # one pose per 0.1 s in a path
PATH_PUBLISH_PERIOD_NS = NS // 2  # a path message twice a second
JPEG_QUALITY = 90
# The robot model's colours, or this when a geom has none worth seeing.
_DEFAULT_RGBA = (0.6, 0.6, 0.65, 1.0)

# --------------------------------------------------------------------------- plain data (JSON)

NON_FINITE_NOTE = "non-finite values are the strings 'inf', '-inf' and 'nan'"


def _is_ns(name: str | None) -> bool:
    return bool(name) and name.endswith("_ns")  # type: ignore[union-attr]


def json_schema(arrow_type: pa.DataType, name: str | None = None) -> dict[str, Any]:
    """A JSON Schema for values of ``arrow_type`` as :func:`to_json_value` writes them
    (``name``: the field's name, which decides whether an integer is a string)."""
    if pa.types.is_struct(arrow_type):
        props = {arrow_type.field(i).name: json_schema(arrow_type.field(i).type, arrow_type.field(i).name) for i in range(arrow_type.num_fields)}
        if "stamp_ns" in props:
            props["timestamp"] = {"type": "object", "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}}}
        return {"type": "object", "properties": props}
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return {"type": "array", "items": json_schema(arrow_type.value_type, name)}
    if pa.types.is_boolean(arrow_type):
        return {"type": "boolean"}
    if pa.types.is_integer(arrow_type):
        if _is_ns(name):
            return {"type": "string", "description": "integer nanoseconds, as a decimal string (exact in JavaScript)"}
        return {"type": "integer"}
    if pa.types.is_floating(arrow_type):
        return {"type": ["number", "string"], "description": NON_FINITE_NOTE}
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return {"type": "string"}
    return {"type": "string", "description": f"arrow {arrow_type}"}


def _float(v: float) -> float | str:
    if math.isfinite(v):
        return v
    return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")


def _plain(obj: Any, name: str | None = None) -> Any:
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, float):
        return _float(obj)
    if isinstance(obj, int):
        return str(obj) if _is_ns(name) else obj
    if isinstance(obj, dict):
        out = {k: _plain(v, k) for k, v in obj.items()}
        stamp = obj.get("stamp_ns")
        if isinstance(stamp, int) and not isinstance(stamp, bool):
            out["timestamp"] = {"sec": stamp // NS, "nsec": stamp % NS}
        return out
    if isinstance(obj, list):
        # scan ranges, joint vectors: whole lists of plain floats pass as they are
        if obj and all(type(v) is float for v in obj):
            return obj if all(map(math.isfinite, obj)) else [_float(v) for v in obj]
        return [_plain(v, name) for v in obj]
    if isinstance(obj, (bytes, bytearray)):
        return base64.b64encode(obj).decode()
    return obj


def _is_bytes(arrow_type: pa.DataType) -> bool:
    return arrow_type in (pa.uint8(), pa.int8())


def to_json_value(value: pa.Array) -> Any:
    """A recorded value as JSON data: a length-1 struct becomes one object,
    a byte array ``{"data": base64}``, anything else ``{"data": [...]}``."""
    if pa.types.is_struct(value.type) and len(value) == 1:
        return _plain(value.to_pylist()[0])
    if _is_bytes(value.type):
        return {"data": base64.b64encode(value.to_numpy(zero_copy_only=False).tobytes()).decode()}
    return {"data": _plain(value.to_pylist())}


def message_kind(value: pa.Array) -> str | None:
    """The contract kind whose Arrow type ``value`` has, or None."""
    for kind, struct in SCHEMAS.items():
        if value.type == struct:
            return kind
    return None


def image_metadata_of(msg: RecordedMessage) -> dict[str, Any] | None:
    """The metadata of a message that claims to be an image (it names
    ``width``, ``height`` or ``encoding``), else None."""
    try:
        meta = json.loads(msg.metadata or "{}")
    except ValueError:
        return None
    return meta if isinstance(meta, dict) and any(k in meta for k in IMAGE_KEYS) else None


def is_image(msg: RecordedMessage) -> bool:
    """True for a valid image message (sizes, encoding and bytes agree)."""
    meta = image_metadata_of(msg)
    return meta is not None and not image_problem(msg.value, meta)


def plain_schema(msg: RecordedMessage) -> tuple[str, dict[str, Any]]:
    """Schema name and JSON Schema of a non-image topic's plain-data channel."""
    kind = message_kind(msg.value)
    if kind is not None:
        return f"teledora.msgs.{kind}", {"title": kind, **json_schema(SCHEMAS[kind])}
    name = f"teledora.{msg.topic}"
    if pa.types.is_struct(msg.value.type):
        return name, {"title": name, **json_schema(msg.value.type)}
    if _is_bytes(msg.value.type):
        data_schema: dict[str, Any] = {"type": "string", "contentEncoding": "base64"}
    else:
        data_schema = json_schema(pa.list_(msg.value.type))
    return name, {"title": name, "type": "object", "properties": {"data": data_schema}}


# --------------------------------------------------------------------------- Foxglove messages


def _fg():
    import foxglove.messages as fg

    return fg


def timestamp(ns: int):
    return _fg().Timestamp(sec=int(ns) // NS, nsec=int(ns) % NS)


def _pose(position, orientation):
    fg = _fg()
    x, y, z = (float(v) for v in position)
    qx, qy, qz, qw = (float(v) for v in orientation)
    return fg.Pose(position=fg.Vector3(x=x, y=y, z=z), orientation=fg.Quaternion(x=qx, y=qy, z=qz, w=qw))


def frame_transforms(transforms: Iterable[Transform], stamp_ns: int):
    fg = _fg()
    ts = timestamp(stamp_ns)
    return fg.FrameTransforms(
        transforms=[
            fg.FrameTransform(
                timestamp=ts,
                parent_frame_id=t.parent,
                child_frame_id=t.child,
                translation=fg.Vector3(x=t.translation[0], y=t.translation[1], z=t.translation[2]),
                rotation=fg.Quaternion(x=t.rotation[0], y=t.rotation[1], z=t.rotation[2], w=t.rotation[3]),
            )
            for t in transforms
        ]
    )


def _color(rgba):
    r, g, b, a = rgba
    if a <= 0.0:
        r, g, b, a = _DEFAULT_RGBA
    return _fg().Color(r=float(r), g=float(g), b=float(b), a=float(a))


def scene_entity(shapes: BodyShapes, stamp_ns: int, entity_id: str):
    """One body's primitives as a frame-locked entity that never expires."""
    fg = _fg()
    cubes, spheres, cylinders, triangles = [], [], [], []
    for p in shapes.primitives:
        pose = _pose(p.position, p.rotation)
        size = fg.Vector3(x=p.size[0], y=p.size[1], z=p.size[2])
        if p.kind == "cube":
            cubes.append(fg.CubePrimitive(pose=pose, size=size, color=_color(p.rgba)))
        elif p.kind == "sphere":
            spheres.append(fg.SpherePrimitive(pose=pose, size=size, color=_color(p.rgba)))
        elif p.kind == "cylinder":
            cylinders.append(fg.CylinderPrimitive(pose=pose, size=size, bottom_scale=1.0, top_scale=1.0, color=_color(p.rgba)))
        elif p.kind == "triangles":
            triangles.append(_triangles(p, pose))
    return fg.SceneEntity(
        timestamp=timestamp(stamp_ns),
        frame_id=shapes.frame,
        id=entity_id,
        frame_locked=True,
        cubes=cubes,
        spheres=spheres,
        cylinders=cylinders,
        triangles=triangles,
    )


def _triangles(p: Primitive, pose):
    fg = _fg()
    pts = np.asarray(p.points, dtype=float).reshape(-1, 3)
    return fg.TriangleListPrimitive(pose=pose, points=[fg.Point3(x=x, y=y, z=z) for x, y, z in pts.tolist()], color=_color(p.rgba))


def scene_update(shapes: list[BodyShapes], stamp_ns: int, prefix: str):
    return _fg().SceneUpdate(entities=[scene_entity(s, stamp_ns, f"{prefix}/{s.frame}") for s in shapes])


def laser_scan(msg: dict[str, Any], stamp_ns: int):
    fg = _fg()
    rays = scan_of(msg)
    return fg.LaserScan(
        timestamp=timestamp(stamp_ns),
        frame_id=rays.frame,
        pose=_pose((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)),
        start_angle=rays.start_angle,
        end_angle=rays.end_angle,
        ranges=rays.ranges.tolist(),
        intensities=rays.intensities.tolist(),
    )


def pose_in_frame(p: FramedPose, stamp_ns: int):
    return _fg().PoseInFrame(timestamp=timestamp(stamp_ns), frame_id=p.frame, pose=_pose(p.position, p.orientation))


def poses_in_frame(frame: str, poses: list[FramedPose], stamp_ns: int):
    return _fg().PosesInFrame(timestamp=timestamp(stamp_ns), frame_id=frame, poses=[_pose(p.position, p.orientation) for p in poses])


def _image_array(msg: RecordedMessage, meta: dict[str, Any]) -> np.ndarray:
    channels = IMAGE_ENCODINGS[meta["encoding"]]
    return msg.value.to_numpy(zero_copy_only=False).reshape(int(meta["height"]), int(meta["width"]), channels)


def compressed_image(msg: RecordedMessage, meta: dict[str, Any], stamp_ns: int):
    """A recorded image as a JPEG foxglove.CompressedImage in its camera's frame:
    a JPEG frame's bytes as recorded (never decoded or re-encoded), a raw one encoded."""
    import cv2

    if meta["encoding"] in COMPRESSED_ENCODINGS:
        return _fg().CompressedImage(timestamp=timestamp(stamp_ns), frame_id=str(meta.get("camera", msg.node)),
                                     data=as_bytes(msg.value), format=meta["encoding"])

    img = _image_array(msg, meta)
    enc = meta["encoding"]
    if enc == "rgb8":
        img = cv2.cvtColor(img, cv2.COLOR_RGB2BGR)
    elif enc == "rgba8":
        img = cv2.cvtColor(img, cv2.COLOR_RGBA2BGR)
    elif enc == "bgra8":
        img = cv2.cvtColor(img, cv2.COLOR_BGRA2BGR)
    ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:  # pragma: no cover - OpenCV encodes any uint8 image
        raise ValueError("JPEG encoding failed")
    return _fg().CompressedImage(timestamp=timestamp(stamp_ns), frame_id=str(meta.get("camera", msg.node)), data=buf.tobytes(), format="jpeg")


def raw_image(msg: RecordedMessage, meta: dict[str, Any], stamp_ns: int):
    """A recorded image as a lossless foxglove.RawImage."""
    width = int(meta["width"])
    return _fg().RawImage(
        timestamp=timestamp(stamp_ns),
        frame_id=str(meta.get("camera", msg.node)),
        width=width,
        height=int(meta["height"]),
        encoding=meta["encoding"],
        step=width * IMAGE_ENCODINGS[meta["encoding"]],
        data=msg.value.to_numpy(zero_copy_only=False).tobytes(),
    )


def camera_calibration(meta: dict[str, Any], stamp_ns: int):
    k = camera_intrinsics(meta)
    if k is None:
        return None
    return _fg().CameraCalibration(
        timestamp=timestamp(stamp_ns),
        frame_id=k.frame,
        width=k.width,
        height=k.height,
        distortion_model="plumb_bob",
        D=[0.0] * 5,
        K=list(k.k),
        R=list(k.r),
        P=list(k.p),
    )


# --------------------------------------------------------------------------- the writer


@dataclass
class _PoseTrack:
    frame: str | None = None
    poses: list[FramedPose] = field(default_factory=list)
    last_pose_ns: int | None = None
    last_publish_ns: int | None = None
    latest: tuple[FramedPose, int, int, int] | None = None  # pose, stamp, log time, publish time


class _McapOut:
    """Registers schemas and channels on first use and counts messages per channel."""

    def __init__(self, writer) -> None:
        self.writer = writer
        self.schemas: dict[str, int] = {}
        self.channels: dict[str, int] = {}
        self.counts: dict[str, int] = {}
        self.seq: dict[str, int] = {}

    def _schema(self, name: str, encoding: str, data: bytes) -> int:
        if name not in self.schemas:
            self.schemas[name] = self.writer.register_schema(name, encoding, data)
        return self.schemas[name]

    def foxglove(self, topic: str, message, log_ns: int, publish_ns: int) -> None:
        if topic not in self.channels:
            s = type(message).get_schema()
            self.channels[topic] = self.writer.register_channel(topic, "protobuf", self._schema(s.name, s.encoding, bytes(s.data)))
        self._add(topic, message.encode(), log_ns, publish_ns)

    def json(self, topic: str, schema_of: Callable[[], tuple[str, dict[str, Any]]], body: Any, log_ns: int,
             publish_ns: int) -> None:
        """``schema_of`` gives the channel's schema name and JSON Schema; it is
        called only when the topic's channel is registered (its first message)."""
        if topic not in self.channels:
            schema_name, schema = schema_of()
            sid = self._schema(schema_name, "jsonschema", json.dumps(schema).encode())
            self.channels[topic] = self.writer.register_channel(topic, "json", sid)
        self._add(topic, json.dumps(body, separators=(",", ":"), allow_nan=False).encode(), log_ns, publish_ns)

    def _add(self, topic: str, data: bytes, log_ns: int, publish_ns: int) -> None:
        seq = self.seq.get(topic, 0)
        self.writer.add_message(self.channels[topic], log_time=int(log_ns), data=data, publish_time=int(publish_ns), sequence=seq % 2**32)
        self.seq[topic] = seq + 1
        self.counts[topic] = self.counts.get(topic, 0) + 1


def _first_kinds(reader: RunReader, topics: list[str]) -> dict[str, str | None]:
    kinds: dict[str, str | None] = {}
    for t in topics:
        first = next(iter(reader.iter_topic(t)), None)
        kinds[t] = None if first is None else message_kind(first.value)
    return kinds


def _pick(kinds: dict[str, str | None], sources: dict[str, tuple[str, str]], kind: str, preferred: list[tuple[str, str]]) -> str | None:
    """The topic of ``kind`` to drive the view with: the first of ``preferred``
    (node, output) that is recorded, else the first such topic by name."""
    of_kind = [t for t, k in kinds.items() if k == kind]
    for src in preferred:
        for t in of_kind:
            if sources.get(t) == src:
                return t
    return of_kind[0] if of_kind else None


def export_mcap(
    reader: RunReader,
    output: Path,
    topics: Iterable[str] | None = None,
    *,
    model=None,
    profile: RobotProfile | None = None,
    skipped: list[str] | None = None,
    advance: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Writes the run (or ``topics`` of it) to an MCAP file with the 3D
    channels and the plain-data channels; returns message counts per MCAP channel.

    Args:
        model: The MuJoCo scene (robot and room) the 3D channels draw; default
            the profile's ``scene``.
        profile: The robot profile; default the shipped one.
        skipped: Gets one line per image frame left out because it is not a
            valid image (sizes, encoding and byte count disagree).
        advance: Called with 1 for each recorded message read (progress).
    """
    import mujoco
    from mcap.writer import Writer

    from teledora import models

    if profile is None:
        profile = models.load_profile()
    if model is None:
        model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    chosen = reader.topics if topics is None else list(topics)
    sources = reader.sources()
    kinds = _first_kinds(reader, chosen)
    odom_topic = _pick(kinds, sources, "Odometry", [("base", "odom")])
    joints_topic = _pick(kinds, sources, "JointState", [("arms", "joint_states"), ("sim", "joint_states")])
    lift_topic = _pick(kinds, sources, "LiftState", [("lift", "state")])

    frames = RobotFrames(model, profile)
    for name, q in profile.home_q().items():
        frames.set_joints({name: q})
    base_id = model.body(profile.base_frame).id
    robot_shapes = body_shapes(model, [base_id] + frames.bodies)
    room_shapes = body_shapes(model, [0])

    m = reader.manifest
    start_ns = m.get("start_ns")
    tracks: dict[str, _PoseTrack] = {}
    with open(output, "wb") as f:
        writer = Writer(f)
        writer.start(profile="", library="teledora")
        writer.add_metadata(
            "teledora.run",
            {k: str(m.get(k)) for k in ("start_ns", "end_ns", "complete", "dataflow_path", "replay_of")}
            | {"git": json.dumps(m.get("git")), "packages": json.dumps(m.get("packages"))},
        )
        out = _McapOut(writer)
        started = False
        for msg in reader.iter_messages(chosen):
            if advance is not None:
                advance(1)
            t_ns = msg.stamp_ns if msg.stamp_ns is not None else message_time_ns(msg)
            if not started:
                t0 = int(start_ns) if isinstance(start_ns, int) and start_ns <= msg.recv_ns else msg.recv_ns
                static = [identity(profile.world_frame, profile.odom_frame)] + frames.transforms()
                out.foxglove(TF_TOPIC, frame_transforms(static, t0), t0, t0)
                out.foxglove(ROBOT_TOPIC, scene_update(robot_shapes, t0, "robot"), t0, t0)
                if room_shapes:
                    out.foxglove(ROOM_TOPIC, scene_update(room_shapes, t0, "room"), t0, t0)
                started = True
            node, output_id = sources.get(msg.topic, (msg.node, msg.output))
            plain_topic = f"/{node}/{output_id}"
            fg_topic = f"/foxglove/{node}/{output_id}"
            publish_ns = message_time_ns(msg)
            meta = image_metadata_of(msg)
            if meta is not None:
                why = image_problem(msg.value, meta)
                if why:  # a frame no viewer could show: left out, and said
                    if skipped is not None:
                        skipped.append(f"{msg.topic} seq {msg.seq}: {why}")
                    continue
                if meta["encoding"] not in COMPRESSED_ENCODINGS:
                    out.foxglove(plain_topic, raw_image(msg, meta, t_ns), msg.recv_ns, publish_ns)
                out.foxglove(fg_topic, compressed_image(msg, meta, t_ns), msg.recv_ns, publish_ns)
                calib = camera_calibration(meta, t_ns)
                if calib is not None:
                    out.foxglove(f"{fg_topic}/calib", calib, msg.recv_ns, publish_ns)
                continue
            out.json(plain_topic, lambda: plain_schema(msg), to_json_value(msg.value), msg.recv_ns, publish_ns)
            kind = kinds.get(msg.topic) if message_kind(msg.value) is not None else None
            if kind not in ("LaserScan",) + POSE_KINDS and msg.topic not in (joints_topic, lift_topic):
                continue
            try:
                data = decode(kind, msg.value)
            except MessageError:
                continue  # recorded but not valid: plain data only
            if kind == "LaserScan":
                out.foxglove(fg_topic, laser_scan(data, t_ns), msg.recv_ns, publish_ns)
            elif kind in POSE_KINDS:
                pose = pose_of(kind, data)
                if pose is not None:
                    out.foxglove(fg_topic, pose_in_frame(pose, t_ns), msg.recv_ns, publish_ns)
                    _track(out, tracks.setdefault(fg_topic, _PoseTrack()), f"{fg_topic}/path", pose, t_ns, msg.recv_ns, publish_ns)
                if msg.topic == odom_topic:
                    out.foxglove(TF_TOPIC, frame_transforms([odom_transform(data)], t_ns), msg.recv_ns, publish_ns)
            elif msg.topic in (joints_topic, lift_topic):
                if kind == "JointState":
                    frames.set_joints(dict(zip(data["names"], (float(v) for v in data["position"]))))
                else:
                    frames.set_lift_height(float(data["height_m"]))
                out.foxglove(TF_TOPIC, frame_transforms(frames.transforms(), t_ns), msg.recv_ns, publish_ns)
        for topic, track in tracks.items():  # each path ends at its last pose
            if track.latest is not None and track.last_publish_ns != track.latest[1]:
                pose, t_ns, log_ns, publish_ns = track.latest
                if track.last_pose_ns != t_ns:
                    track.poses.append(pose)
                out.foxglove(f"{topic}/path", poses_in_frame(pose.frame, track.poses, t_ns), log_ns, publish_ns)
        writer.finish()
    return out.counts


def _track(out: _McapOut, track: _PoseTrack, topic: str, pose: FramedPose, t_ns: int, log_ns: int, publish_ns: int) -> None:
    if track.frame != pose.frame:
        track.frame, track.poses = pose.frame, []
    track.latest = (pose, t_ns, log_ns, publish_ns)
    if track.last_pose_ns is None or t_ns - track.last_pose_ns >= PATH_POSE_PERIOD_NS:
        track.poses.append(pose)
        track.last_pose_ns = t_ns
    if track.last_publish_ns is None or t_ns - track.last_publish_ns >= PATH_PUBLISH_PERIOD_NS:
        out.foxglove(topic, poses_in_frame(pose.frame, track.poses, t_ns), log_ns, publish_ns)
        track.last_publish_ns = t_ns


# --------------------------------------------------------------------------- a layout to open it with

# Colours of the estimates in the 3D panel (and the layout's legend in docs/viewing.md).
POSE_COLOURS = {
    "base/odom": "#1f77b4",  # blue
    "ekf/pose": "#ff7f0e",  # orange
    "mocap/pose": "#2ca02c",  # green
    "sim/ground_truth": "#7f7f7f",  # grey
}
SCAN_COLOURS = {"lidar_front/scan": "#d62728", "lidar_back/scan": "#9467bd", "scan_merger/scan": "#17becf"}


def foxglove_layout(schemas: dict[str, str], world_frame: str, base_frame: str) -> str:
    """A Foxglove layout (JSON) for an export whose channels have ``schemas``
    (channel → schema name): a 3D panel in ``world_frame`` following ``base_frame``
    with the robot, room, scans, poses and paths switched on, beside an Image
    panel per compressed camera image (with its calibration)."""
    import foxglove.layouts as fl

    topics: dict[str, Any] = {}
    for channel, schema in sorted(schemas.items()):
        key = channel.removeprefix("/foxglove/")
        if schema == "foxglove.SceneUpdate":
            topics[channel] = fl.BaseRendererSceneUpdateTopicSettings(visible=True)
        elif schema == "foxglove.LaserScan":
            topics[channel] = fl.BaseRendererLaserScanTopicSettings(
                visible=True, point_size=4.0, color_mode="flat", flat_color=SCAN_COLOURS.get(key, "#d62728"))
        elif schema == "foxglove.PoseInFrame":
            topics[channel] = fl.BaseRendererPoseTopicSettings(visible=True, type="arrow", color=POSE_COLOURS.get(key, "#bcbd22"))
        elif schema == "foxglove.PosesInFrame":
            colour = POSE_COLOURS.get(key.removesuffix("/path"), "#bcbd22")
            topics[channel] = fl.BaseRendererPosesTopicSettings(visible=True, type="line", line_width=0.02, gradient=(colour, colour))
    three_d = fl.ThreeDeePanel(
        title="robot, scans and estimates",
        config=fl.ThreeDeeConfig(fixed_frame=world_frame, follow_tf=base_frame, follow_mode="follow-position", topics=topics),
    )
    images = [
        fl.SplitItem(content=fl.ImagePanel(
            title=channel.removeprefix("/foxglove/"),
            config=fl.ImageConfig(image_mode=fl.ImageModeConfig(
                image_topic=channel, image_schema_name="foxglove.CompressedImage",
                calibration_topic=f"{channel}/calib" if f"{channel}/calib" in schemas else None)),
        ))
        for channel, schema in sorted(schemas.items())
        if schema == "foxglove.CompressedImage"
    ]
    items = [fl.SplitItem(proportion=2.0, content=three_d)]
    if images:
        items.append(fl.SplitItem(content=fl.SplitContainer(direction="column", items=images)))
    return fl.Layout(content=fl.SplitContainer(direction="row", items=items)).to_json()


def channel_schemas(path: Path) -> dict[str, str]:
    """Channel → schema name of an MCAP file (from its summary)."""
    from mcap.reader import make_reader

    with open(path, "rb") as f:
        summary = make_reader(f).get_summary()
    if summary is None:  # pragma: no cover - export_mcap always writes one
        return {}
    return {c.topic: summary.schemas[c.schema_id].name for c in summary.channels.values() if c.schema_id in summary.schemas}
