"""Contract messages to view items: what the Rerun view shows of each topic.

The items are plain data (entity path, arrays, numbers, text) so the mapping
is tested without a viewer; ``teledora.devices.viewing.rerun_sink`` logs them.
All items of one message belong to the message's stamp (robot time), so the
live view and a converted run share one timeline.

Entity tree:

* ``world/robot/<body>``: each body's world pose (Transform3D) with its shapes
  below it (static: boxes, capsules, cylinders, ellipsoids, meshes);
  ``world/room``: the room's fixed shapes.
* ``world/frames/<frame>``: ``base_link`` and each lidar site's pose;
  scans are points in their own frame below it
  (``world/frames/lidar_front/lidar_front__scan``).
* ``world/frames/base_link/grip_targets/<side>``: teleop's grip-site targets.
* ``world/trajectories/<source>``: odometry, EKF, mocap and ground truth as
  line strips in the world frame (points taken at the plots' rate) (odometry's ``odom`` frame is drawn as the
  world frame: they coincide at the start of a sim run).
* ``cameras/<camera>``: images.
* ``plots/...``: joint positions (``plots/joints/<node>``, one series per
  joint) and commands (``plots/joints/<node>_command``), base and lift
  commands, lift height, odometry twist, diagnostics levels (0 ok, 1 warn,
  2 error); ``diagnostics/<node>``: text.

Topics not listed in :data:`SHOWN_KINDS` (journals, XR controllers, optical
flow, gyro, wheel commands, recorder status) are not shown.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np
import pyarrow as pa

from teledora.operators.contract.messages import SCHEMAS
from teledora.operators.viewing.robot_geometry import Pose, RobotPoser, Shape
from teledora.operators.viewing.viewer_config import ViewerConfig

IMAGE_KIND = "Image"
#: Message kinds the view shows (Image: a camera frame, flat uint8 with metadata).
SHOWN_KINDS = ("JointState", "JointCommands", "LiftState", "Odometry", "GroundTruth", "PoseEstimate", "MocapPose",
               "LaserScan", "ArmTargets", "BaseCommand", "LiftCommand", "Diagnostics", IMAGE_KIND)
LEVELS = {"ok": 0, "warn": 1, "error": 2}
_TRAJECTORY_KINDS = {"Odometry": "odometry", "PoseEstimate": "ekf", "MocapPose": "mocap", "GroundTruth": "ground_truth"}
TRAJECTORY_COLORS = {"odometry": (230, 159, 0, 255), "ekf": (0, 114, 178, 255), "mocap": (0, 158, 115, 255),
                     "ground_truth": (120, 120, 120, 255)}


# ------------------------------------------------------------------ view items


@dataclass(frozen=True)
class Transform:
    path: str
    translation: np.ndarray
    quaternion_xyzw: np.ndarray


@dataclass(frozen=True)
class Points:
    path: str
    positions: np.ndarray  # (N, 3)
    radius_m: float
    color: tuple[int, int, int, int]


@dataclass(frozen=True)
class LineStrip:
    path: str
    points: np.ndarray  # (N, 3)
    color: tuple[int, int, int, int]


@dataclass(frozen=True)
class Scalar:
    path: str
    value: float


@dataclass(frozen=True)
class Series:
    """Several named values plotted together (one joint group, one command)."""

    path: str
    values: np.ndarray
    names: tuple[str, ...]


@dataclass(frozen=True)
class Image:
    path: str
    pixels: np.ndarray  # (H, W, C) uint8
    encoding: str


@dataclass(frozen=True)
class EncodedImage:
    """A compressed camera frame handed to the viewer as it is (the viewer decodes it)."""

    path: str
    data: bytes
    media_type: str  # e.g. "image/jpeg"


@dataclass(frozen=True)
class Text:
    path: str
    text: str
    level: str  # ok | warn | error


@dataclass(frozen=True)
class ShapeItem:
    path: str
    shape: Shape


ViewItem = Transform | Points | LineStrip | Scalar | Series | Image | EncodedImage | Text | ShapeItem


# ------------------------------------------------------------------ kinds


_BY_TYPE = {struct: kind for kind, struct in SCHEMAS.items()}


def kind_of(value_type: pa.DataType, metadata: Mapping[str, Any]) -> str | None:
    """The message kind of a value: a contract struct, ``Image`` (flat uint8
    with image metadata), or None for anything else."""
    if pa.types.is_struct(value_type):
        return _BY_TYPE.get(value_type)
    if pa.types.is_uint8(value_type) and "encoding" in metadata and "width" in metadata:
        return IMAGE_KIND
    return None


def scan_points(msg: Mapping[str, Any]) -> np.ndarray:
    """The finite returns of a LaserScan as (N, 3) points in its frame (z = 0).
    +Inf (no return), -Inf (too close) and NaN (invalid) are left out, as are
    ranges outside [range_min, range_max]."""
    r = np.asarray(msg["ranges"], dtype=float)
    angles = msg["angle_min"] + msg["angle_increment"] * np.arange(len(r))
    keep = np.isfinite(r) & (r >= msg["range_min"]) & (r <= msg["range_max"])
    r, a = r[keep], angles[keep]
    return np.stack([r * np.cos(a), r * np.sin(a), np.zeros_like(r)], axis=1)


def yaw_quaternion(yaw: float) -> np.ndarray:
    return np.array([0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)])


# ------------------------------------------------------------------ the mapper


@dataclass
class RobotBinding:
    """The robot model behind the view: its poser, shapes and lift mapping."""

    poser: RobotPoser
    shapes: Sequence[Shape]
    lift_height_to_joint: Any  # Callable[[float], float]
    frame_sites: Sequence[str] = ("lidar_front", "lidar_back")


@dataclass
class MapperCounts:
    """Messages seen, shown (at least one item) and skipped by decimation, per topic."""

    seen: dict[str, int] = field(default_factory=dict)
    shown: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)


class ViewMapper:
    """Stateful mapping from (topic, kind, decoded message, stamp) to view items.

    Args:
        config: Rates, trajectory length and robot sources (viewer.yaml).
        robot: The robot model, or None to show no robot (scans then sit in
            frames that are never placed).
        base_frame: The robot's base body (the profile's base frame): placed
            with the robot, and the frame of messages that name none.
    """

    def __init__(self, config: ViewerConfig, robot: RobotBinding | None, base_frame: str) -> None:
        self.config = config
        self.robot = robot
        self.base_frame = base_frame
        self.counts = MapperCounts()
        self._last: dict[str, int] = {}
        self._tracks: dict[str, deque] = {}
        self._track_drawn: dict[str, bool] = {}

    # -------------------------------------------------------------- static

    def static_items(self) -> list[ViewItem]:
        """The robot's and the room's shapes (log once, static)."""
        if self.robot is None:
            return []
        items: list[ViewItem] = []
        for s in self.robot.shapes:
            parent = "world/room" if s.body == "world" else f"world/robot/{s.body}"
            items.append(ShapeItem(f"{parent}/{s.name}", s))
        return items

    # -------------------------------------------------------------- per message

    def _due(self, key: str, stamp_ns: int, rate_hz: float) -> bool:
        if rate_hz <= 0:
            return True
        last = self._last.get(key)
        if last is None or stamp_ns < last or stamp_ns - last >= 1e9 / rate_hz:
            self._last[key] = stamp_ns
            return True
        return False

    def _would(self, key: str, stamp_ns: int, rate_hz: float) -> bool:
        last = self._last.get(key)
        return rate_hz <= 0 or last is None or stamp_ns < last or stamp_ns - last >= 1e9 / rate_hz

    def wants(self, topic: str, kind: str | None, stamp_ns: int | None) -> bool:
        """Whether a message of ``topic`` and ``kind`` stamped ``stamp_ns`` would
        show anything: lets a caller skip decoding what decimation would drop.
        A robot state is taken at the robot's rate (each source on its own), so
        a drawn robot may combine an arm state up to one robot period old with
        newer odometry."""
        if kind is None or kind not in SHOWN_KINDS:
            return False
        if stamp_ns is None:
            return True
        r = self.config.rates_hz
        if self._is_robot_source(topic, kind) and self._would(f"{topic}#robot", stamp_ns, r.robot_hz):
            return True
        per_kind = {"LaserScan": (topic, r.scans_hz), IMAGE_KIND: (topic, r.images_hz),
                    "Diagnostics": (topic, r.diagnostics_hz), "ArmTargets": (topic, r.scalars_hz)}
        if kind in per_kind:
            key, rate = per_kind[kind]
            if self._would(key, stamp_ns, rate):
                return True
        return self._would(f"{topic}#scalars", stamp_ns, r.scalars_hz)

    def _is_robot_source(self, topic: str, kind: str) -> bool:
        src = self.config.robot_sources
        return self.robot is not None and topic in (src.arms, src.lift, src.base) and kind in (
            "JointState", "LiftState", "Odometry", "GroundTruth")

    def on_message(self, topic: str, kind: str, msg: Any, stamp_ns: int,
                   metadata: Mapping[str, Any] | None = None) -> list[ViewItem]:
        """Items for one message (empty when its kind is not shown or it is decimated).

        ``msg`` is the decoded dict, or for ``Image`` the (H, W, C) pixel array
        (``metadata`` then carries ``encoding``)."""
        c = self.counts
        c.seen[topic] = c.seen.get(topic, 0) + 1
        items = self._items(topic, kind, msg, stamp_ns, metadata or {})
        if items:
            c.shown[topic] = c.shown.get(topic, 0) + 1
        elif kind in SHOWN_KINDS:
            c.skipped[topic] = c.skipped.get(topic, 0) + 1
        return items

    def skip(self, topic: str) -> None:
        """Counts a message the caller dropped after :meth:`wants` said no."""
        self.counts.seen[topic] = self.counts.seen.get(topic, 0) + 1
        self.counts.skipped[topic] = self.counts.skipped.get(topic, 0) + 1

    def _items(self, topic: str, kind: str, msg: Any, stamp: int, metadata: Mapping[str, Any]) -> list[ViewItem]:
        rates = self.config.rates_hz
        items: list[ViewItem] = []
        if self._is_robot_source(topic, kind) and self._due(f"{topic}#robot", stamp, rates.robot_hz):
            self._update_robot(topic, kind, msg)
            if self._due("robot", stamp, rates.robot_hz):
                items += self.robot_items()
        if kind == "LaserScan":
            if self._due(topic, stamp, rates.scans_hz):
                frame = msg["frame_id"] or self.base_frame
                color = (255, 80, 80, 255) if "front" in topic else (80, 80, 255, 255) if "back" in topic else (40, 200, 40, 255)
                items.append(Points(f"world/frames/{frame}/{topic}", scan_points(msg), 0.015, color))
        elif kind == IMAGE_KIND:
            if self._due(topic, stamp, rates.images_hz):
                name = metadata.get("camera") or topic.split("__", 1)[-1]
                encoding = str(metadata.get("encoding", "rgb8"))
                if isinstance(msg, bytes):  # a compressed frame: checked, not decoded here
                    items.append(EncodedImage(f"cameras/{name}", msg, f"image/{encoding}"))
                else:
                    items.append(Image(f"cameras/{name}", msg, encoding))
        elif kind == "Diagnostics":
            if self._due(topic, stamp, rates.diagnostics_hz):
                node = msg["node"] or topic.split("__", 1)[0]
                items.append(Scalar(f"plots/diagnostics/{node}", float(LEVELS.get(msg["level"], 2))))
                text = msg["message"] or msg["last_error"] or msg["level"]
                items.append(Text(f"diagnostics/{node}", text, msg["level"]))
        elif kind == "ArmTargets":
            if self._due(topic, stamp, rates.scalars_hz):
                frame = msg["frame_id"] or self.base_frame
                for side in ("left", "right"):
                    t = msg[side]
                    if t["enabled"]:
                        items.append(Transform(f"world/frames/{frame}/grip_targets/{side}", np.asarray(t["position"]),
                                               np.asarray(t["orientation"])))
                        items.append(Points(f"world/frames/{frame}/grip_targets/{side}/point", np.zeros((1, 3)), 0.02,
                                            (255, 0, 255, 255)))
        if self._due(f"{topic}#scalars", stamp, rates.scalars_hz):
            # trajectory points are taken at the plots' rate too
            if kind in _TRAJECTORY_KINDS:
                items += self._trajectory(topic, kind, msg, stamp)
            items += self._scalars(topic, kind, msg)
        return items

    def _update_robot(self, topic: str, kind: str, msg: Any) -> bool:
        if self.robot is None:
            return False
        src, poser = self.config.robot_sources, self.robot.poser
        if topic == src.arms and kind == "JointState":
            poser.set_joints(msg["names"], msg["position"])
        elif topic == src.lift and kind == "LiftState":
            poser.set_lift(self.robot.lift_height_to_joint(msg["height_m"]))
        elif topic == src.base and kind == "Odometry":
            poser.set_base(msg["x"], msg["y"], msg["yaw"])
        elif kind == "GroundTruth" and topic in (src.arms, src.lift, src.base):
            # ground truth carries every group: take those it is configured for
            if topic == src.base:
                poser.set_base(msg["x"], msg["y"], msg["yaw"])
            if topic == src.lift:
                poser.set_lift(self.robot.lift_height_to_joint(msg["lift_height_m"]))
            if topic == src.arms:
                poser.set_joints(msg["joint_names"], msg["joint_position"])
        else:
            return False
        return True

    def robot_items(self) -> list[ViewItem]:
        """Every body's and frame's current world pose."""
        assert self.robot is not None
        poser = self.robot.poser
        items: list[ViewItem] = [Transform(f"world/robot/{name}", p.position, p.quaternion_xyzw)
                                 for name, p in poser.body_poses().items()]
        frames: dict[str, Pose] = {}
        base = poser.body_poses().get(self.base_frame)
        if base is not None:
            frames[self.base_frame] = base
        frames.update(poser.site_poses(self.robot.frame_sites))
        items += [Transform(f"world/frames/{name}", p.position, p.quaternion_xyzw) for name, p in frames.items()]
        return items

    def _trajectory(self, topic: str, kind: str, msg: Mapping[str, Any], stamp: int) -> list[ViewItem]:
        source = _TRAJECTORY_KINDS[kind]
        if kind == "MocapPose":
            if not msg["tracking_valid"]:
                return []
            point = np.asarray(msg["position"], dtype=float)
        else:
            point = np.array([msg["x"], msg["y"], 0.0])
        track = self._tracks.setdefault(source, deque(maxlen=self.config.trajectory_max_points))
        track.append(point)
        self._track_drawn[source] = False
        if len(track) < 2 or not self._due(f"{topic}#trajectory", stamp, self.config.rates_hz.trajectories_hz):
            return []
        self._track_drawn[source] = True
        return [LineStrip(f"world/trajectories/{source}", np.array(track), TRAJECTORY_COLORS[source])]

    def final_items(self) -> list[ViewItem]:
        """The trajectories whose newest points decimation held back (log them
        at the last stamp when a recording ends)."""
        return [LineStrip(f"world/trajectories/{source}", np.array(track), TRAJECTORY_COLORS[source])
                for source, track in self._tracks.items() if len(track) >= 2 and not self._track_drawn.get(source, True)]

    @staticmethod
    def _scalars(topic: str, kind: str, msg: Any) -> list[ViewItem]:
        where = topic.split("__", 1)[0]
        if kind == "JointState":
            return [Series(f"plots/joints/{where}", np.asarray(msg["position"], dtype=float), tuple(msg["names"]))]
        if kind == "JointCommands":
            return [Series(f"plots/joints/{where}_command", np.asarray(msg["q_ref"], dtype=float), tuple(msg["names"]))]
        if kind == "LiftState":
            return [Scalar("plots/lift/height_m", float(msg["height_m"]))]
        if kind == "LiftCommand":
            return [Scalar("plots/lift/command_m_s", float(msg["velocity_m_s"]))]
        if kind == "BaseCommand":
            keys = ("forward_m_s", "left_m_s", "yaw_rad_s")
            return [Series("plots/base/command", np.array([float(msg[k]) for k in keys]), keys)]
        if kind == "Odometry":
            keys = ("vx", "vy", "wz")
            return [Series("plots/base/odometry_twist", np.array([float(msg[k]) for k in keys]), keys)]
        return []


def decode_for_view(value: pa.Array, metadata: Mapping[str, Any]) -> tuple[str | None, Any, int | None]:
    """``(kind, message, stamp_ns)`` of one received or recorded value: the
    decoded dict (or, for an image, its (H, W, C) pixels; for a JPEG frame its
    checked bytes, which the viewer decodes) and its stamp; kind
    None (and nothing decoded) for a value the view does not show.

    Raises:
        MessageError: the value breaks the contract (the view skips it).
    """
    from teledora.operators.contract.compressed_image import COMPRESSED_ENCODINGS
    from teledora.operators.contract.messages import compressed_image_bytes, decode, decode_image

    kind = kind_of(value.type, metadata)
    if kind is None or kind not in SHOWN_KINDS:
        return None, None, None
    if kind == IMAGE_KIND:
        stamp = metadata.get("stamp_ns")
        compressed = metadata.get("encoding") in COMPRESSED_ENCODINGS
        image = compressed_image_bytes(value, metadata) if compressed else decode_image(value, metadata)
        return kind, image, int(stamp) if stamp is not None else None
    msg = decode(kind, value)
    return kind, msg, int(msg["stamp_ns"])


def peek_stamp(value: pa.Array, metadata: Mapping[str, Any]) -> int | None:
    """The stamp of a value without decoding it (None when it has none to read)."""
    try:
        if pa.types.is_struct(value.type) and value.type.get_field_index("stamp_ns") >= 0 and len(value) == 1:
            stamp = value.field("stamp_ns")[0].as_py()
        else:
            stamp = metadata.get("stamp_ns")
        return int(stamp) if stamp is not None else None
    except (TypeError, ValueError, IndexError):
        return None
