"""The XR feed frame: a JSON object with both controllers, parsed strictly.

One frame (a UDP datagram's payload, or one WebSocket text message from the
WebXR page)::

    {"version": 1, "session": "a1b2", "seq": 42, "sent_ns": 1700000000123456789,
     "frame": "flu",                       # or "webxr" (+x right, +y up, -z forward)
     "focused": true,                      # optional, default true
     "ui": {"estop": false, "release_stop": false, "pause": false,    # optional, each key
            "episode_start": false, "episode_keep": false, "episode_discard": false},
     "hands": {"left": HAND, "right": HAND}}

    HAND = {"connected": true, "pose_valid": true,
            "position": [x, y, z], "orientation": [qx, qy, qz, qw], "pose_ns": ...,
            "trigger": 0.0, "squeeze": 0.0, "stick": [x, y],
            "primary": false, "secondary": false, "stick_click": false, "menu": false,
            "input_ns": ...}

Stamps are the sender's clock (ns): ``sent_ns`` when the frame left,
``pose_ns``/``input_ns`` when the pose and the buttons were sampled (default
``sent_ns``; never later than it). Mapping them to the host clock is the
assembler's job (:mod:`teledora.operators.xr.feed_assembler`). ``stick`` is
the xr-standard thumbstick (x right positive, y pushed forward *negative*);
``frame`` only concerns the pose. The ``ui`` keys are the page's buttons, each
a level held up for a moment per press (the receivers act on rising edges):
the stop controls (teleop) and the episode buttons (the episodes node). A hand that is not connected, or whose pose
is not valid, may omit the pose (a pose that is not used is not read).

The frame is refused whole (:class:`FeedFormatError` with a reason code) when
it is larger than :data:`MAX_FRAME_BYTES`, nested deeper than the format,
not strict JSON (NaN, 1e999, duplicate keys), of another version, has an
unknown or mistyped key, a number outside its range, a quaternion whose
norm is off 1 by more than :data:`QUAT_NORM_TOLERANCE`, a position outside
the tracking volume, or a sample stamp later than ``sent_ns``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.geometry import Pose, PoseError
from teledora.operators.model.sides import SIDES
from teledora.operators.xr.feed_rejection import FeedFormatError
from teledora.operators.xr.strict_json import loads_bounded
from teledora.operators.xr.xr_frames import webxr_pose_to_flu

FEED_VERSION = 1
MAX_FRAME_BYTES = 4096
#: frame {} > hands {} > hand {} > position []: the format is 4 levels deep.
MAX_FRAME_DEPTH = 4
#: An orientation is accepted when | |q| - 1 | <= this, and then normalised; a
#: float32 quaternion from a runtime is within 1e-6, one printed with three
#: decimals within 3e-3.
QUAT_NORM_TOLERANCE = 0.01
#: The tracking volume, in FLU about the reference space's origin: |x|, |y| <=
#: 10 m horizontally and |z| <= 3 m vertically (a 20 m x 20 m x 6 m box, larger
#: than any room-scale play area a headset tracks in).
TRACKING_HALF_WIDTH_M = 10.0
TRACKING_HALF_HEIGHT_M = 3.0
#: Stamps are int64 nanoseconds, never negative.
MAX_STAMP_NS = 2**63 - 1
MAX_SESSION_CHARS = 64
_BUTTONS = ("primary", "secondary", "stick_click", "menu")
_TOP_KEYS = frozenset({"version", "session", "seq", "sent_ns", "frame", "focused", "ui", "hands"})
_HAND_KEYS = frozenset({"connected", "pose_valid", "position", "orientation", "pose_ns", "trigger", "squeeze",
                        "stick", "input_ns", *_BUTTONS})
_UI_KEYS = frozenset({"estop", "release_stop", "pause", "episode_start", "episode_keep", "episode_discard"})
_UNIT_SLACK = 1e-6  # analog values this far outside their range are rounding, and clipped


@dataclass(frozen=True)
class HandSample:
    """One hand of a frame: pose already in FLU, stamps on the sender's clock."""

    connected: bool
    pose: Pose | None
    pose_ns: int
    trigger: float
    squeeze: float
    stick: tuple[float, float]
    buttons: dict[str, bool]
    input_ns: int


@dataclass(frozen=True)
class FeedFrame:
    session: str
    seq: int
    sent_ns: int
    focused: bool
    ui: dict[str, bool]
    hands: dict[str, HandSample]


def _number(v: Any, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise FeedFormatError("schema", f"{where} must be a number, got {type(v).__name__}")
    x = float(v)
    if not math.isfinite(x):  # the JSON reader already refuses these; a direct caller might not
        raise FeedFormatError("non_finite", f"{where} is not finite")
    return x


def _stamp(d: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise FeedFormatError("schema", f"{where}.{key} must be an integer (ns), got {type(v).__name__}")
    if not 0 <= v <= MAX_STAMP_NS:
        raise FeedFormatError("number_range", f"{where}.{key} must be in [0, 2^63), got {v}")
    return v


def _bool(d: Mapping[str, Any], key: str, where: str, default: bool | None = None) -> bool:
    v = d.get(key, default)
    if not isinstance(v, bool):
        raise FeedFormatError("schema", f"{where}.{key} must be true or false, got {type(v).__name__}")
    return v


def _in_range(x: float, lo: float, hi: float, where: str) -> float:
    if not lo - _UNIT_SLACK <= x <= hi + _UNIT_SLACK:
        raise FeedFormatError("number_range", f"{where} must be in [{lo:g}, {hi:g}], got {x:g}")
    return min(max(x, lo), hi)


def _numbers(d: Mapping[str, Any], key: str, n: int, where: str) -> list[float]:
    v = d.get(key)
    if not isinstance(v, list) or len(v) != n:
        raise FeedFormatError("schema", f"{where}.{key} must be a list of {n} numbers")
    return [_number(x, f"{where}.{key}") for x in v]


def _pose(d: Mapping[str, Any], where: str, frame: str) -> Pose:
    p = _numbers(d, "position", 3, where)
    q = _numbers(d, "orientation", 4, where)
    norm = math.sqrt(sum(x * x for x in q))
    if not abs(norm - 1.0) <= QUAT_NORM_TOLERANCE:
        raise FeedFormatError("quaternion_norm",
                              f"{where}.orientation has norm {norm:.6g}; a unit quaternion within {QUAT_NORM_TOLERANCE} is required")
    try:
        pose = webxr_pose_to_flu(p, q) if frame == "webxr" else Pose.of(p, q)
    except PoseError as exc:  # unreachable after the checks above; kept as a typed refusal
        raise FeedFormatError("schema", f"{where}: {exc}") from None
    x, y, z = (float(c) for c in pose.position)
    if not (abs(x) <= TRACKING_HALF_WIDTH_M and abs(y) <= TRACKING_HALF_WIDTH_M and abs(z) <= TRACKING_HALF_HEIGHT_M):
        raise FeedFormatError("position_range",
                              f"{where}.position {[round(c, 3) for c in (x, y, z)]} m (FLU) is outside the tracking volume "
                              f"(|x|, |y| <= {TRACKING_HALF_WIDTH_M:g} m, |z| <= {TRACKING_HALF_HEIGHT_M:g} m)")
    return pose


def _hand(d: Any, where: str, frame: str, sent_ns: int) -> HandSample:
    if not isinstance(d, dict):
        raise FeedFormatError("schema", f"{where} must be an object")
    unknown = sorted(set(d) - _HAND_KEYS)
    if unknown:
        raise FeedFormatError("schema", f"{where}: unknown keys {[k[:40] for k in unknown[:8]]}")
    connected = _bool(d, "connected", where)
    pose_valid = _bool(d, "pose_valid", where, False)
    pose = _pose(d, where, frame) if connected and pose_valid else None
    stick = _numbers(d, "stick", 2, where) if "stick" in d else [0.0, 0.0]
    pose_ns = _stamp(d, "pose_ns", where, sent_ns)
    input_ns = _stamp(d, "input_ns", where, sent_ns)
    for key, stamp in (("pose_ns", pose_ns), ("input_ns", input_ns)):
        if stamp > sent_ns:
            raise FeedFormatError("stamp_order", f"{where}.{key} {stamp} is later than sent_ns {sent_ns}")
    return HandSample(
        connected=connected,
        pose=pose,
        pose_ns=pose_ns,
        trigger=_in_range(_number(d.get("trigger", 0.0), f"{where}.trigger"), 0.0, 1.0, f"{where}.trigger"),
        squeeze=_in_range(_number(d.get("squeeze", 0.0), f"{where}.squeeze"), 0.0, 1.0, f"{where}.squeeze"),
        stick=(_in_range(stick[0], -1.0, 1.0, f"{where}.stick[0]"), _in_range(stick[1], -1.0, 1.0, f"{where}.stick[1]")),
        buttons={b: _bool(d, b, where, False) for b in _BUTTONS},
        input_ns=input_ns,
    )


def frame_from_object(d: Any) -> FeedFrame:
    """Validates an already-parsed frame object (see :func:`parse_frame`).

    Raises:
        FeedFormatError: any field missing, unknown, mistyped or out of range.
    """
    if not isinstance(d, dict):
        raise FeedFormatError("schema", "a frame must be a JSON object")
    if type(d.get("version")) is not int or d["version"] != FEED_VERSION:
        raise FeedFormatError("version", f"unsupported version {str(d.get('version'))[:20]}; this reader speaks {FEED_VERSION}")
    unknown = sorted(set(d) - _TOP_KEYS)
    if unknown:
        raise FeedFormatError("schema", f"unknown keys {[k[:40] for k in unknown[:8]]}")
    session = d.get("session", "")
    if not isinstance(session, str) or len(session) > MAX_SESSION_CHARS:
        raise FeedFormatError("schema", f"session must be a string of at most {MAX_SESSION_CHARS} characters")
    seq = _stamp(d, "seq", "frame")
    sent_ns = _stamp(d, "sent_ns", "frame")
    frame = d.get("frame")
    if frame not in ("flu", "webxr"):
        raise FeedFormatError("schema", f"frame must be 'flu' or 'webxr', got {str(frame)[:20]!r}")
    ui_raw = d.get("ui", {})
    if not isinstance(ui_raw, dict) or not set(ui_raw) <= _UI_KEYS:
        raise FeedFormatError("schema", f"ui must be an object with keys from {sorted(_UI_KEYS)}")
    ui = {k: _bool(ui_raw, k, "ui", False) for k in sorted(_UI_KEYS)}
    hands = d.get("hands")
    if not isinstance(hands, dict) or set(hands) != set(SIDES):
        raise FeedFormatError("schema", "hands must be an object with exactly 'left' and 'right'")
    focused = _bool(d, "focused", "frame", True)
    return FeedFrame(
        session=session,
        seq=seq,
        sent_ns=sent_ns,
        focused=focused,
        ui=ui,
        hands={h: _hand(hands[h], f"hands.{h}", frame, sent_ns) for h in SIDES},
    )


def parse_frame(data: bytes | str) -> FeedFrame:
    """Parses and validates one feed frame.

    Raises:
        FeedFormatError: with the reason code of the first problem found
            (see :data:`teledora.operators.xr.feed_rejection.REASONS`).
    """
    return frame_from_object(loads_bounded(data, MAX_FRAME_BYTES, MAX_FRAME_DEPTH))

