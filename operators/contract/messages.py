"""The message contract: one Arrow schema per message kind, with validating codecs.

Every contract message travels as a ``pa.StructArray`` of length one. ``encode``
builds it from a plain dict and ``decode`` turns it back into a dict (numeric
lists become ``np.ndarray``, string lists ``list[str]``, nested structs dicts).
Both validate and raise :class:`MessageError` for anything a receiver must not
act on: missing or extra fields, wrong Arrow types, wrong fixed lengths,
NaN/Inf where a value must be finite, unnormalised quaternions, and bad joint
name lists (empty, duplicate, or not matching the value arrays).

Whether the names are the *right* names is the receiver's question:
:func:`require_joint_names` checks them against an expected set.

Images are not structs: they travel as flat ``uint8`` arrays with their shape
in dora metadata, either raw pixels or one JPEG file (``encoding: "jpeg"``,
:mod:`~teledora.operators.contract.compressed_image`); :func:`image_metadata`
and :func:`decode_image` handle both.
docs/messages.md lists every topic with units, frames and rates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa

from teledora.operators.contract.compressed_image import (
    COMPRESSED_ENCODINGS,
    JpegError,
    as_bytes,
    decode_jpeg,
    jpeg_problem,
)
from teledora.operators.errors import TeledoraError


class MessageError(TeledoraError, ValueError):
    """A message does not satisfy the contract; the receiver must drop it whole.

    ``reason`` names the rule broken, for counting: ``contract`` (shape, types,
    NaN/Inf, quaternions, name lists) or one of the plausibility rules of
    :mod:`~teledora.operators.contract.message_limits` (``out_of_range``,
    ``future_stamp``, ``bad_stamp``, ``unknown_joint``, ``empty``, ...)."""

    def __init__(self, *args: object, reason: str = "contract") -> None:
        super().__init__(*args)
        self.reason = reason


@dataclass(frozen=True)
class Field:
    """One field of a message kind.

    Args:
        name: Field name.
        type: Arrow type.
        length: Required list length (fixed-size vectors), or None.
        finite: Numeric values must be finite (no NaN, no Inf).
        same_length_as: Name of a list field this list must match in length
            (an empty list is allowed when ``optional_empty``).
        optional_empty: Allows an empty list even when ``same_length_as`` is set.
        unique: List elements must be unique and non-empty (joint names).
        quaternion: Four-element (x, y, z, w) unit quaternion.
        added_default: Set on a field added to a kind after messages of it were
            recorded: a message without it (an older run, or an older sender)
            reads as having this value.
    """

    name: str
    type: pa.DataType
    length: int | None = None
    finite: bool = True
    same_length_as: str | None = None
    optional_empty: bool = False
    unique: bool = False
    quaternion: bool = False
    added_default: Any = None


F64, I64, I32, I16, BOOL, STR = pa.float64(), pa.int64(), pa.int32(), pa.int16(), pa.bool_(), pa.string()
F64_LIST, F32_LIST, STR_LIST = pa.list_(pa.float64()), pa.list_(pa.float32()), pa.list_(pa.string())
I64_LIST = pa.list_(pa.int64())

_QUAT_TOLERANCE = 1e-3


def _vec(name: str, n: int, **kw: Any) -> Field:
    return Field(name, F64_LIST, length=n, **kw)


def _names(name: str = "names") -> Field:
    return Field(name, STR_LIST, unique=True)


def _values(name: str, of: str = "names", optional_empty: bool = False) -> Field:
    return Field(name, F64_LIST, same_length_as=of, optional_empty=optional_empty)


HAND_FIELDS: tuple[Field, ...] = (
    Field("connected", BOOL),
    Field("epoch", I64),
    Field("pose_valid", BOOL),
    _vec("position", 3),
    _vec("orientation", 4, quaternion=True),
    Field("trigger", F64),
    Field("squeeze", F64),
    _vec("stick", 2),
    Field("primary", BOOL),
    Field("secondary", BOOL),
    Field("stick_click", BOOL),
    Field("menu", BOOL),
    Field("pose_stamp_ns", I64),
    Field("input_stamp_ns", I64),
)

ARM_TARGET_FIELDS: tuple[Field, ...] = (
    Field("enabled", BOOL),
    _vec("position", 3),
    _vec("orientation", 4, quaternion=True),
    Field("gripper", F64),
    Field("slow", BOOL),
)

_HAND = pa.struct([pa.field(f.name, f.type) for f in HAND_FIELDS])
_ARM_TARGET = pa.struct([pa.field(f.name, f.type) for f in ARM_TARGET_FIELDS])

_NESTED: dict[pa.DataType, tuple[Field, ...]] = {_HAND: HAND_FIELDS, _ARM_TARGET: ARM_TARGET_FIELDS}


def _stamp() -> Field:
    return Field("stamp_ns", I64)


KINDS: dict[str, tuple[Field, ...]] = {
    # xr/controllers: both hands in the operator's FLU frame.
    "XrControllers": (
        _stamp(),
        Field("frame_id", STR),
        Field("seq", I64),
        Field("source", STR),
        Field("focused", BOOL),
        Field("ui_estop", BOOL),
        Field("ui_release_stop", BOOL),
        Field("ui_pause", BOOL),
        Field("ui_episode_start", BOOL),
        Field("ui_episode_keep", BOOL),
        Field("ui_episode_discard", BOOL),
        Field("left", _HAND),
        Field("right", _HAND),
    ),
    # teleop/arm_targets: grip-site targets in the base frame.
    "ArmTargets": (
        _stamp(),
        Field("frame_id", STR),
        Field("left", _ARM_TARGET),
        Field("right", _ARM_TARGET),
    ),
    "BaseCommand": (_stamp(), Field("forward_m_s", F64), Field("left_m_s", F64), Field("yaw_rad_s", F64)),
    "LiftCommand": (_stamp(), Field("velocity_m_s", F64)),
    "TeleopState": (
        _stamp(),
        Field("estop_latched", BOOL),
        Field("release_armed", BOOL),
        Field("arms_paused", BOOL),
        Field("left_clutched", BOOL),
        Field("right_clutched", BOOL),
        Field("left_slow", BOOL),
        Field("right_slow", BOOL),
        Field("left_pinch", STR),
        Field("right_pinch", STR),
        Field("reset_count", I64),
        Field("events", STR_LIST),
        # who drives the robot (operators/policy/authority.py); runs from before it read "operator"
        Field("driver", STR, added_default="operator"),
    ),
    # episodes/marks: the operator's episode boundaries (start, keep, discard) with the task text.
    "EpisodeMark": (_stamp(), Field("event", STR), Field("task", STR)),
    # episodes/state: what the episodes node holds now (on each change, and once a second).
    "EpisodeState": (
        _stamp(),
        Field("open", BOOL),
        Field("task", STR),
        Field("number", I64),
        Field("opened_ns", I64),
        Field("discard_armed", BOOL),
        Field("kept", I64),
        Field("discarded", I64),
    ),
    # teleop/joint_commands (the IK's): arm and gripper joints, name-addressed.
    "JointCommands": (
        _stamp(),
        _names(),
        _values("q_ref"),
        _values("dq_ref"),
        Field("status", STR),
    ),
    "JointState": (
        _stamp(),
        _names(),
        _values("position"),
        _values("velocity", optional_empty=True),
        _values("effort", optional_empty=True),
    ),
    # base/wheel_commands: raw goal velocities (ticks/s) as the driver writes them.
    "WheelCommands": (_stamp(), Field("left", I16), Field("back", I16), Field("right", I16)),
    # base/odom: pose in frame_id, twist in child_frame_id (body).
    "Odometry": (
        _stamp(),
        Field("frame_id", STR),
        Field("child_frame_id", STR),
        Field("x", F64),
        Field("y", F64),
        Field("yaw", F64),
        Field("vx", F64),
        Field("vy", F64),
        Field("wz", F64),
    ),
    "LiftState": (_stamp(), Field("height_m", F64), Field("velocity_m_s", F64), Field("homed", BOOL)),
    # LaserScan (REP 117): ranges may hold +Inf (no return), -Inf (too close), NaN (invalid).
    "LaserScan": (
        _stamp(),
        Field("frame_id", STR),
        Field("angle_min", F64),
        Field("angle_max", F64),
        Field("angle_increment", F64),
        Field("time_increment", F64),
        Field("scan_time", F64),
        Field("range_min", F64),
        Field("range_max", F64),
        Field("ranges", F32_LIST, finite=False),
        Field("intensities", F32_LIST, same_length_as="ranges", optional_empty=True),
    ),
    "OpticalFlow": (
        _stamp(),
        Field("frame_id", STR),
        Field("flow_rate_x", F64),
        Field("flow_rate_y", F64),
        Field("quality", I32),
        Field("ground_distance_m", F64),
        Field("integration_time_s", F64),
    ),
    "Gyro": (_stamp(), Field("frame_id", STR), _vec("angular_velocity", 3)),
    # ekf/pose: planar pose + body twist, covariance 3x3 row-major over (x, y, yaw).
    "PoseEstimate": (
        _stamp(),
        Field("frame_id", STR),
        Field("x", F64),
        Field("y", F64),
        Field("yaw", F64),
        Field("vx", F64),
        Field("vy", F64),
        Field("wz", F64),
        _vec("covariance", 9),
        Field("source", STR),
    ),
    # mocap/pose: when tracking_valid is false, position/orientation are NaN.
    "MocapPose": (
        _stamp(),
        Field("frame_id", STR),
        Field("rigid_body_id", I32),
        Field("name", STR),
        _vec("position", 3, finite=False),
        _vec("orientation", 4, finite=False),
        Field("tracking_valid", BOOL),
        Field("mean_error_m", F64, finite=False),
        Field("frame_number", I64),
    ),
    "GroundTruth": (
        _stamp(),
        Field("frame_id", STR),
        Field("x", F64),
        Field("y", F64),
        Field("yaw", F64),
        Field("vx", F64),
        Field("vy", F64),
        Field("wz", F64),
        Field("lift_height_m", F64),
        _names("joint_names"),
        _values("joint_position", of="joint_names"),
        _values("joint_velocity", of="joint_names"),
    ),
    # sim/objects (sim only): the scene's free bodies (objects to grasp) in world, by name;
    # orientation as (qx, qy, qz, qw) per object
    "ObjectPoses": (
        _stamp(),
        Field("frame_id", STR),
        _names("names"),
        _values("x"),
        _values("y"),
        _values("z"),
        _values("qx"),
        _values("qy"),
        _values("qz"),
        _values("qw"),
    ),
    "Diagnostics": (
        _stamp(),
        Field("node", STR),
        Field("level", STR),
        Field("message", STR),
        Field("received", I64),
        Field("sent", I64),
        Field("rejected", I64),
        Field("clamped", I64),
        Field("dropped", I64),
        Field("last_error", STR),
        Field("details_json", STR),
    ),
    # cameras/calibration: one camera's intrinsics (pixels, plumb_bob k1 k2 p1 p2 k3) and its mount:
    # the optical frame in parent_frame as xyz (m) and URDF fixed-axis rpy (rad); source "sim" or "v4l2"
    "CameraCalibration": (
        _stamp(),
        Field("camera", STR),
        Field("source", STR),
        Field("device", STR),
        Field("width", I32),
        Field("height", I32),
        Field("rate_hz", F64),
        Field("fx", F64),
        Field("fy", F64),
        Field("cx", F64),
        Field("cy", F64),
        Field("distortion_model", STR),
        _vec("distortion", 5),
        Field("parent_frame", STR),
        _vec("mount_xyz", 3),
        _vec("mount_rpy", 3),
    ),
    # recorder/status: the recorder's heartbeat (see operators/recording/recorder_watch.py)
    "RecorderStatus": (_stamp(), Field("recording", BOOL), Field("messages", I64), Field("lag_ns", I64)),
    # a journaled node's input batches and clock reads (see operators/recording/input_journal.py)
    "InputJournal": (
        _stamp(),
        Field("node", STR),
        Field("first_step", I64),
        Field("step_events", I64_LIST),
        Field("event_inputs", STR_LIST),
        Field("event_seqs", I64_LIST, same_length_as="event_inputs"),
        Field("step_reads", I64_LIST, same_length_as="step_events"),
        Field("clock_ns", I64_LIST),
        Field("outputs", STR_LIST),
        Field("output_counts", I64_LIST, same_length_as="outputs"),
    ),
}

DIAGNOSTIC_LEVELS = ("ok", "warn", "error")


def _extra_mocap_check(msg: Mapping[str, Any]) -> None:
    if msg["tracking_valid"]:
        if not (np.all(np.isfinite(msg["position"])) and np.all(np.isfinite(msg["orientation"]))):
            raise MessageError("MocapPose: tracking_valid but position/orientation not finite")
        _check_quaternion("MocapPose.orientation", msg["orientation"])


def _extra_diagnostics_check(msg: Mapping[str, Any]) -> None:
    if msg["level"] not in DIAGNOSTIC_LEVELS:
        raise MessageError(f"Diagnostics.level must be one of {DIAGNOSTIC_LEVELS}, got {msg['level']!r}")


def _extra_journal_check(msg: Mapping[str, Any]) -> None:
    if int(np.sum(msg["step_events"])) != len(msg["event_inputs"]):
        raise MessageError("InputJournal.step_events must add up to the number of events")
    if int(np.sum(msg["step_reads"])) != len(msg["clock_ns"]):
        raise MessageError("InputJournal.step_reads must add up to the number of clock reads")
    if np.any(msg["step_events"] < 0) or np.any(msg["step_reads"] < 0) or msg["first_step"] < 0:
        raise MessageError("InputJournal: counts and first_step must be >= 0")


def _extra_calibration_check(msg: Mapping[str, Any]) -> None:
    if msg["width"] <= 0 or msg["height"] <= 0:
        raise MessageError("CameraCalibration: width and height must be positive")
    if not (msg["fx"] > 0 and msg["fy"] > 0 and msg["rate_hz"] > 0):
        raise MessageError("CameraCalibration: fx, fy and rate_hz must be positive")
    if not msg["camera"] or not msg["parent_frame"]:
        raise MessageError("CameraCalibration: camera and parent_frame must be named")


def _extra_scan_check(msg: Mapping[str, Any]) -> None:
    # ROS allows either sign: a clockwise scanner may publish angle_min > angle_max
    # with a negative increment. Only a zero (or non-finite) step is meaningless.
    inc = msg["angle_increment"]
    if len(msg["ranges"]) > 1 and not (np.isfinite(inc) and inc != 0):
        raise MessageError("LaserScan.angle_increment must be finite and non-zero")
    if not msg["range_min"] < msg["range_max"]:
        raise MessageError("LaserScan.range_min must be < range_max")


# TeleopState.driver: who drives (the selector's drivers, operators/policy/authority.py)
TELEOP_DRIVERS = ("operator", "policy", "stopped")


def _extra_teleop_state_check(msg: Mapping[str, Any]) -> None:
    if msg["driver"] not in TELEOP_DRIVERS:
        raise MessageError(f"TeleopState.driver must be one of {TELEOP_DRIVERS}, got {msg['driver']!r}")


_EXTRA_CHECKS: dict[str, Callable[[Mapping[str, Any]], None]] = {
    "TeleopState": _extra_teleop_state_check,
    "MocapPose": _extra_mocap_check,
    "Diagnostics": _extra_diagnostics_check,
    "LaserScan": _extra_scan_check,
    "InputJournal": _extra_journal_check,
    "CameraCalibration": _extra_calibration_check,
}

SCHEMAS: dict[str, pa.StructType] = {
    kind: pa.struct([pa.field(f.name, f.type) for f in fields]) for kind, fields in KINDS.items()
}

# The Arrow type a kind had before its added fields (a recorded or older message
# of it decodes with their defaults), and those defaults.
_ADDED: dict[str, dict[str, Any]] = {
    kind: {f.name: f.added_default for f in fields if f.added_default is not None} for kind, fields in KINDS.items()
}
_ADDED = {kind: added for kind, added in _ADDED.items() if added}
_OLDER_SCHEMAS: dict[str, pa.StructType] = {
    kind: pa.struct([pa.field(f.name, f.type) for f in KINDS[kind] if f.name not in added]) for kind, added in _ADDED.items()
}


def schema(kind: str) -> pa.StructType:
    """The Arrow struct type of a message kind."""
    try:
        return SCHEMAS[kind]
    except KeyError:
        raise MessageError(f"unknown message kind {kind!r}; known: {sorted(SCHEMAS)}") from None


def _check_quaternion(where: str, q: np.ndarray) -> None:
    norm = math.sqrt(float(np.dot(q, q)))
    if abs(norm - 1.0) > _QUAT_TOLERANCE:
        raise MessageError(f"{where}: quaternion (x, y, z, w) must be unit length, norm is {norm:.6f}")


def _category_of(f_type: pa.DataType) -> str:
    """What kind of python value a field of this Arrow type holds."""
    if f_type in _NESTED:
        return "nested"
    if pa.types.is_list(f_type):
        if pa.types.is_string(f_type.value_type):
            return "str_list"
        return "int_list" if pa.types.is_integer(f_type.value_type) else "num_list"
    if pa.types.is_boolean(f_type):
        return "bool"
    if pa.types.is_integer(f_type):
        return "int"
    if pa.types.is_floating(f_type):
        return "float"
    if pa.types.is_string(f_type):
        return "str"
    raise MessageError(f"unsupported type {f_type}")  # pragma: no cover


class _Spec:
    """A field with everything the codecs ask of its Arrow type worked out once:
    hashing and comparing ``pa.DataType`` objects per field and per message
    cost more than the checks themselves."""

    __slots__ = ("field", "name", "category", "nested", "check")

    def __init__(self, f: Field) -> None:
        self.field, self.name, self.category = f, f.name, _category_of(f.type)
        self.nested = _Plan(_NESTED[f.type]) if f.type in _NESTED else None
        self.check = _check_of(self)


# What _validate_fields does with a field, worked out once per field (dispatching on
# the value's type per field and per message cost more than most checks).
_NO_CHECK, _NESTED_CHECK, _ARRAY_CHECK, _FLOAT_CHECK, _NAMES_CHECK = range(5)


def _check_of(spec: "_Spec") -> int:
    f = spec.field
    if f.unique and spec.category != "str_list":
        raise MessageError(f"{f.name}: only a string list can require unique names")  # pragma: no cover
    if spec.nested is not None:
        return _NESTED_CHECK
    if spec.category in ("num_list", "int_list"):
        return _ARRAY_CHECK if (f.length is not None or f.finite or f.same_length_as or f.quaternion) else _NO_CHECK
    if spec.category == "float":
        return _FLOAT_CHECK if f.finite else _NO_CHECK
    return _NAMES_CHECK if f.unique else _NO_CHECK


class _Plan:
    """The compiled fields of one message kind (or nested struct) and their names."""

    __slots__ = ("specs", "names")

    def __init__(self, fields: Sequence[Field]) -> None:
        self.specs = tuple(_Spec(f) for f in fields)
        self.names = frozenset(s.name for s in self.specs)


_PLANS: dict[str, _Plan] = {kind: _Plan(fields) for kind, fields in KINDS.items()}


def _validate_fields(where: str, plan: _Plan, msg: Mapping[str, Any]) -> None:
    """Checks values already converted to python/numpy (by ``_normalise`` or
    ``_from_row``: arrays for numeric lists, floats, lists of names) against
    the field rules."""
    for spec in plan.specs:
        check = spec.check
        if check == _NO_CHECK:
            continue
        v = msg[spec.name]
        if check == _FLOAT_CHECK:
            if v - v != 0.0:  # NaN or +-Inf: the only floats whose difference with themselves is not 0
                raise MessageError(f"{where}.{spec.name}: {v} is not finite")
        elif check == _ARRAY_CHECK:
            f = spec.field
            n = v.shape[0]
            if f.length is not None and n != f.length:
                raise MessageError(f"{where}.{f.name}: expected length {f.length}, got {n}")
            # count_nonzero is one C call; ndarray.all() goes through a python wrapper
            if f.finite and n and spec.category == "num_list" and np.count_nonzero(np.isfinite(v)) != v.size:
                raise MessageError(f"{where}.{f.name}: contains NaN or Inf")
            if f.same_length_as is not None:
                other = len(msg[f.same_length_as])
                if n != other and not (f.optional_empty and n == 0):
                    raise MessageError(f"{where}.{f.name}: length {n} does not match {f.same_length_as} ({other})")
            if f.quaternion:
                _check_quaternion(f"{where}.{f.name}", v)
        elif check == _NESTED_CHECK:
            _validate_fields(f"{where}.{spec.name}", spec.nested, v)
        else:  # _NAMES_CHECK
            path = f"{where}.{spec.name}"
            if len(v) == 0:
                raise MessageError(f"{path}: empty name list")
            if any(not isinstance(s, str) or not s for s in v):
                raise MessageError(f"{path}: names must be non-empty strings")
            if len(set(v)) != len(v):
                dup = sorted({s for s in v if v.count(s) > 1})
                raise MessageError(f"{path}: duplicate names {dup}")


def _to_python(spec: _Spec, v: Any, parent: str) -> Any:
    """Normalises an encode() input value for validation (``parent``: the path
    of the struct holding it, for error messages)."""
    cat = spec.category
    t = type(v)
    if cat == "float":
        if t is float:
            return v
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise MessageError(f"{parent}.{spec.name}: expected float, got {t.__name__}")
        return float(v)
    if cat == "num_list":
        try:
            arr = np.asarray(v, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise MessageError(f"{parent}.{spec.name}: expected a numeric list ({exc})") from None
        if arr.ndim != 1:
            raise MessageError(f"{parent}.{spec.name}: expected a flat list, got shape {arr.shape}")
        return arr
    if cat == "nested":
        if not isinstance(v, Mapping):
            raise MessageError(f"{parent}.{spec.name}: expected a mapping")
        return _normalise(f"{parent}.{spec.name}", spec.nested, v)
    if cat == "bool":
        if t is bool:
            return v
        if not isinstance(v, np.bool_):
            raise MessageError(f"{parent}.{spec.name}: expected bool, got {t.__name__}")
        return bool(v)
    if cat == "int":
        if t is int:
            return v
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise MessageError(f"{parent}.{spec.name}: expected int, got {t.__name__}")
        return int(v)
    if cat == "int_list":
        arr = np.asarray(v)
        if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
            raise MessageError(f"{parent}.{spec.name}: expected a flat list of integers")
        return arr.astype(np.int64)
    if cat == "str_list":
        if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
            raise MessageError(f"{parent}.{spec.name}: expected a list of strings")
        return list(v)
    if t is not str and not isinstance(v, str):
        raise MessageError(f"{parent}.{spec.name}: expected str, got {t.__name__}")
    return v


def _normalise(where: str, plan: _Plan, msg: Mapping[str, Any]) -> dict[str, Any]:
    names, specs = plan.names, plan.specs
    added = _ADDED.get(where)
    if added and any(k not in msg for k in added):
        msg = {**added, **msg}
    if len(msg) != len(names) or not names.issuperset(msg):
        missing = [s.name for s in specs if s.name not in msg]
        extra = [k for k in msg if k not in names]
        if missing:
            raise MessageError(f"{where}: missing fields {missing}")
        if extra:
            raise MessageError(f"{where}: unknown fields {extra}")
    return {s.name: _to_python(s, msg[s.name], where) for s in specs}


def _check(kind: str, msg: Mapping[str, Any]) -> None:
    _validate_fields(kind, _PLANS[kind], msg)
    extra = _EXTRA_CHECKS.get(kind)
    if extra:
        extra(msg)


def _to_arrow_py(plan: _Plan, clean: Mapping[str, Any]) -> dict[str, Any]:
    row = {}
    for s in plan.specs:
        v = clean[s.name]
        if s.nested is not None:
            v = _to_arrow_py(s.nested, v)
        elif isinstance(v, np.ndarray):
            v = v.tolist()
        row[s.name] = v
    return row


def encode(kind: str, msg: Mapping[str, Any]) -> pa.StructArray:
    """Validates ``msg`` and returns it as a length-one struct array of ``kind``.

    Raises:
        MessageError: the message breaks the contract.
    """
    struct = schema(kind)
    plan = _PLANS[kind]
    clean = _normalise(kind, plan, msg)
    _check(kind, clean)
    try:
        return pa.array([_to_arrow_py(plan, clean)], type=struct)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        raise MessageError(f"{kind}: {exc}") from None


def _from_row(where: str, plan: _Plan, row: Mapping[str, Any]) -> dict[str, Any]:
    """Converts one row (from ``to_pylist``) into python/numpy, rejecting nulls."""
    out: dict[str, Any] = {}
    for s in plan.specs:
        v = row[s.name]
        if v is None:
            raise MessageError(f"{where}.{s.name}: null value")
        cat = s.category
        if cat == "nested":
            out[s.name] = _from_row(f"{where}.{s.name}", s.nested, v)
        elif cat == "num_list":
            if None in v:
                raise MessageError(f"{where}.{s.name}: null inside a numeric list")
            out[s.name] = np.asarray(v, dtype=np.float64)
        elif cat == "int_list":
            if None in v:
                raise MessageError(f"{where}.{s.name}: null inside an integer list")
            out[s.name] = np.asarray(v, dtype=np.int64)
        elif cat == "str_list" and None in v:
            raise MessageError(f"{where}.{s.name}: null inside a string list")
        else:
            out[s.name] = v
    return out


def decode(kind: str, value: pa.Array, limits: Any = None, now_ns: int | None = None) -> dict[str, Any]:
    """Validates a received dora value of ``kind`` and returns it as a dict.

    Args:
        kind: The message kind.
        value: The received value.
        limits: A :class:`~teledora.operators.contract.message_limits.MessageLimits`
            to hold the message to as well (plausible values, known joints,
            stamps), or None for the contract's shape rules alone.
        now_ns: The receiver's clock, for the limits' stamp window.

    Raises:
        MessageError: wrong type or length, nulls, or a rule of the contract
            (or of ``limits``) broken.
    """
    struct = schema(kind)
    if not isinstance(value, pa.Array):
        raise MessageError(f"{kind}: expected a pyarrow Array, got {type(value).__name__}")
    older = value.type != struct and kind in _OLDER_SCHEMAS and value.type == _OLDER_SCHEMAS[kind]
    if value.type != struct and not older:  # a message fresh from dora brings its own type object: compared in full
        raise MessageError(f"{kind}: wrong Arrow type {value.type}; expected {struct}")
    if len(value) != 1:
        raise MessageError(f"{kind}: expected exactly one message, got {len(value)}")
    row = value.to_pylist()[0]
    if row is None:
        raise MessageError(f"{kind}: null message")
    if older:
        row = {**_ADDED[kind], **row}
    msg = _from_row(kind, _PLANS[kind], row)
    _check(kind, msg)
    if limits is not None:
        limits.check(kind, msg, now_ns)
    return msg


def require_joint_names(names: Sequence[str], expected: Iterable[str], *, subset_ok: bool = False) -> None:
    """Raises MessageError unless ``names`` are exactly (or, with ``subset_ok``, a
    subset of) ``expected``. Order never matters: joint data is name-addressed."""
    expected_set = set(expected)
    got = set(names)
    if len(got) != len(names):
        raise MessageError("duplicate joint names")
    unknown = sorted(got - expected_set)
    if unknown:
        raise MessageError(f"unknown joint names {unknown}")
    missing = sorted(expected_set - got)
    if missing and not subset_ok:
        raise MessageError(f"missing joint names {missing}")


IMAGE_ENCODINGS = {"rgb8": 3, "bgr8": 3, "mono8": 1}  # raw pixels: channels per pixel
# every encoding an image message may name: raw, or compressed (one JPEG per frame)
ALL_IMAGE_ENCODINGS = tuple(IMAGE_ENCODINGS) + COMPRESSED_ENCODINGS


def image_metadata(
    *, width: int, height: int, encoding: str, camera: str, stamp_ns: int, fx: float, fy: float, cx: float, cy: float
) -> dict[str, Any]:
    """dora metadata for an image output (the value is the flat uint8 pixel
    array, or the JPEG's bytes for ``encoding="jpeg"``)."""
    if encoding not in ALL_IMAGE_ENCODINGS:
        raise MessageError(f"image encoding must be one of {sorted(ALL_IMAGE_ENCODINGS)}, got {encoding!r}")
    return {
        "width": int(width),
        "height": int(height),
        "encoding": encoding,
        "camera": camera,
        "stamp_ns": int(stamp_ns),
        "fx": float(fx),
        "fy": float(fy),
        "cx": float(cx),
        "cy": float(cy),
    }


def _image_header(value: pa.Array, metadata: Mapping[str, Any]) -> tuple[int, int, str]:
    """(width, height, encoding) of an image message whose metadata and value type are sound."""
    try:
        width, height, encoding = int(metadata["width"]), int(metadata["height"]), metadata["encoding"]
    except (KeyError, TypeError, ValueError) as exc:
        raise MessageError(f"image metadata incomplete: {exc}") from None
    if width <= 0 or height <= 0:
        raise MessageError(f"image size {width}x{height} is impossible (both must be positive)", reason="out_of_range")
    if encoding not in ALL_IMAGE_ENCODINGS:
        raise MessageError(f"unknown image encoding {encoding!r}")
    if not isinstance(value, pa.Array) or value.type != pa.uint8():
        raise MessageError(f"image must be a uint8 array, got {getattr(value, 'type', type(value))}")
    return width, height, encoding


def compressed_image_bytes(value: pa.Array, metadata: Mapping[str, Any]) -> bytes:
    """The bytes of a compressed (``jpeg``) image message, checked as a whole
    JPEG of the metadata's size but not decoded: for a consumer that hands the
    frame on as it is (a viewer's encoded image, an export)."""
    width, height, encoding = _image_header(value, metadata)
    if encoding not in COMPRESSED_ENCODINGS:
        raise MessageError(f"image encoding {encoding!r} is not compressed")
    try:
        data = as_bytes(value)
        why = jpeg_problem(data, width, height)
    except JpegError as exc:
        why = str(exc)
    if why:
        raise MessageError(f"{encoding} image refused: {why}", reason="bad_image")
    return data


def decode_image(value: pa.Array, metadata: Mapping[str, Any]) -> np.ndarray:
    """Returns the (H, W, C) uint8 pixels of an image message, validated against its metadata.

    Raw pixels come back as a zero-copy view; a JPEG frame is decoded to RGB
    (C = 3), after its header was checked against ``width`` and ``height``."""
    width, height, encoding = _image_header(value, metadata)
    channels = IMAGE_ENCODINGS.get(encoding)
    if channels is None:
        try:
            return decode_jpeg(value, width, height)
        except JpegError as exc:
            raise MessageError(f"{encoding} image refused: {exc}", reason="bad_image") from None
    if len(value) != width * height * channels:
        raise MessageError(f"image has {len(value)} bytes, expected {width}x{height}x{channels}")
    return value.to_numpy(zero_copy_only=True).reshape(height, width, channels)
