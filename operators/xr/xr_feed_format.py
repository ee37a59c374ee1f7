"""The XR feed: a JSON frame format for controller reports, and its assembly into
``XrControllers`` messages.

One frame (a UDP datagram, or one WebSocket text message from the WebXR page)::

    {"version": 1, "session": "a1b2", "seq": 42, "sent_ns": 1700000000123456789,
     "frame": "flu",                       # or "webxr" (+x right, +y up, -z forward)
     "focused": true,                      # optional, default true
     "ui": {"estop": false, "release_stop": false, "pause": false},   # optional
     "hands": {"left": HAND, "right": HAND}}

    HAND = {"connected": true, "pose_valid": true,
            "position": [x, y, z], "orientation": [qx, qy, qz, qw], "pose_ns": ...,
            "trigger": 0.0, "squeeze": 0.0, "stick": [x, y],
            "primary": false, "secondary": false, "stick_click": false, "menu": false,
            "input_ns": ...}

Times are the sender's clock (ns). ``pose_ns``/``input_ns`` default to ``sent_ns``;
only their age relative to ``sent_ns`` is used, so sender and host clocks need
not agree. ``stick`` is always the xr-standard thumbstick (x right positive, y
pushed forward *negative*), as in the contract; ``frame`` only concerns the pose.
A hand that is not connected, or whose pose is not valid, may omit the pose.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from teledora.operators.errors import ProtocolError, TeledoraError
from teledora.operators.geometry import Pose, PoseError
from teledora.operators.model.sides import SIDES
from teledora.operators.xr.xr_frames import webxr_pose_to_flu

FEED_VERSION = 1
MAX_FRAME_BYTES = 4096
_BUTTONS = ("primary", "secondary", "stick_click", "menu")
_TOP_KEYS = {"version", "session", "seq", "sent_ns", "frame", "focused", "ui", "hands"}
_HAND_KEYS = {"connected", "pose_valid", "position", "orientation", "pose_ns", "trigger", "squeeze", "stick",
              "input_ns", *_BUTTONS}
_UI_KEYS = {"estop", "release_stop", "pause"}
_SEQ_RESTART_GAP = 1000  # a sequence number this far backwards means the sender restarted


class FeedFormatError(ProtocolError):
    """A feed frame that is malformed, oversized or of an unsupported version."""


@dataclass(frozen=True)
class HandSample:
    """One hand of a frame, already in FLU; ages are relative to the frame's ``sent_ns``."""

    connected: bool
    pose: Pose | None
    pose_age_ns: int
    trigger: float
    squeeze: float
    stick: tuple[float, float]
    buttons: dict[str, bool]
    input_age_ns: int


@dataclass(frozen=True)
class FeedFrame:
    session: str
    seq: int
    sent_ns: int
    focused: bool
    ui: dict[str, bool]
    hands: dict[str, HandSample]


def _int(d: Mapping[str, Any], key: str, where: str, default: int | None = None) -> int:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int):
        raise FeedFormatError(f"{where}.{key} must be an integer, got {v!r}")
    return v


def _bool(d: Mapping[str, Any], key: str, where: str, default: bool | None = None) -> bool:
    v = d.get(key, default)
    if not isinstance(v, bool):
        raise FeedFormatError(f"{where}.{key} must be true or false, got {v!r}")
    return v


def _unit(d: Mapping[str, Any], key: str, where: str) -> float:
    v = d.get(key, 0.0)
    if v is None:
        return 0.0  # some runtimes report missing analog values as null
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not -1e-6 <= v <= 1.0 + 1e-6:
        raise FeedFormatError(f"{where}.{key} must be a number in [0, 1], got {v!r}")
    return float(min(max(v, 0.0), 1.0))


def _numbers(d: Mapping[str, Any], key: str, n: int, where: str) -> list[float]:
    v = d.get(key)
    if not isinstance(v, list) or len(v) != n:
        raise FeedFormatError(f"{where}.{key} must be a list of {n} numbers, got {v!r}")
    out = []
    for x in v:
        if x is None:
            x = float("nan")
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise FeedFormatError(f"{where}.{key} must hold numbers, got {x!r}")
        out.append(float(x))
    return out


def _hand(d: Any, where: str, frame: str, sent_ns: int) -> HandSample:
    if not isinstance(d, dict):
        raise FeedFormatError(f"{where} must be an object")
    unknown = sorted(set(d) - _HAND_KEYS)
    if unknown:
        raise FeedFormatError(f"{where}: unknown keys {unknown}")
    connected = _bool(d, "connected", where)
    pose_valid = connected and _bool(d, "pose_valid", where, False)
    pose = None
    if pose_valid:
        try:
            p, q = _numbers(d, "position", 3, where), _numbers(d, "orientation", 4, where)
            pose = webxr_pose_to_flu(p, q) if frame == "webxr" else Pose.of(p, q)
        except PoseError as exc:
            raise FeedFormatError(f"{where}: {exc}") from None
    sx, sy = _numbers(d, "stick", 2, where) if "stick" in d else [0.0, 0.0]
    stick = (sx if math.isfinite(sx) else 0.0, sy if math.isfinite(sy) else 0.0)  # null axes count as centred
    if not all(-1.0 - 1e-6 <= s <= 1.0 + 1e-6 for s in stick):
        raise FeedFormatError(f"{where}.stick must be within [-1, 1], got {list(stick)}")
    return HandSample(
        connected=connected,
        pose=pose,
        pose_age_ns=max(0, sent_ns - _int(d, "pose_ns", where, sent_ns)),
        trigger=_unit(d, "trigger", where),
        squeeze=_unit(d, "squeeze", where),
        stick=(float(np.clip(stick[0], -1, 1)), float(np.clip(stick[1], -1, 1))),
        buttons={b: _bool(d, b, where, False) for b in _BUTTONS},
        input_age_ns=max(0, sent_ns - _int(d, "input_ns", where, sent_ns)),
    )


def parse_frame(data: bytes | str) -> FeedFrame:
    """Parses and validates one feed frame.

    Raises:
        FeedFormatError: oversized, not JSON, wrong version, or any field malformed.
    """
    if len(data) > MAX_FRAME_BYTES:
        raise FeedFormatError(f"frame of {len(data)} bytes exceeds {MAX_FRAME_BYTES}")
    try:
        d = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FeedFormatError(f"not JSON: {exc}") from None
    if not isinstance(d, dict):
        raise FeedFormatError("frame must be a JSON object")
    if d.get("version") != FEED_VERSION:
        raise FeedFormatError(f"unsupported version {d.get('version')!r}; this reader speaks {FEED_VERSION}")
    unknown = sorted(set(d) - _TOP_KEYS)
    if unknown:
        raise FeedFormatError(f"unknown keys {unknown}")
    session = d.get("session", "")
    if not isinstance(session, str) or len(session) > 64:
        raise FeedFormatError("session must be a string of at most 64 characters")
    seq = _int(d, "seq", "frame")
    if seq < 0:
        raise FeedFormatError("seq must be >= 0")
    sent_ns = _int(d, "sent_ns", "frame")
    frame = d.get("frame")
    if frame not in ("flu", "webxr"):
        raise FeedFormatError(f"frame must be 'flu' or 'webxr', got {frame!r}")
    ui_raw = d.get("ui", {})
    if not isinstance(ui_raw, dict) or set(ui_raw) - _UI_KEYS:
        raise FeedFormatError(f"ui must be an object with keys from {sorted(_UI_KEYS)}")
    ui = {k: _bool(ui_raw, k, "ui", False) for k in sorted(_UI_KEYS)}
    hands = d.get("hands")
    if not isinstance(hands, dict) or set(hands) != set(SIDES):
        raise FeedFormatError("hands must be an object with exactly 'left' and 'right'")
    return FeedFrame(
        session=session,
        seq=seq,
        sent_ns=sent_ns,
        focused=_bool(d, "focused", "frame", True),
        ui=ui,
        hands={h: _hand(hands[h], f"hands.{h}", frame, sent_ns) for h in SIDES},
    )


class StaleFrameError(TeledoraError, ValueError):
    """A frame older than (or equal to) the newest already accepted from this session."""


class FeedAssembler:
    """Turns accepted frames into ``XrControllers`` dicts on the host clock.

    Keeps the per-hand connection epochs: an epoch increments whenever a hand
    (re)connects, and for both hands when the sender session (or controlling
    client) changes, so the teleop scheme can discard old references.

    Args:
        source: Written into each message's ``source`` field (e.g. ``"udp"``).
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self._session: str | None = None
        self._last_seq: int | None = None
        self._epoch = dict.fromkeys(SIDES, 0)
        self._connected = dict.fromkeys(SIDES, False)
        self.clock_offset_ns: int | None = None  # min(host receive - sender send): the sender-to-host mapping
        self.out_seq = 0

    def new_client(self) -> None:
        """Call when the controlling client changes: every hand gets a new epoch."""
        self._session, self._last_seq = None, None
        self._connected = dict.fromkeys(SIDES, False)

    def assemble(self, frame: FeedFrame, recv_ns: int) -> dict[str, Any]:
        """Message dict for ``frame`` received at host time ``recv_ns``.

        Raises:
            StaleFrameError: a duplicate or reordered frame (drop it).
        """
        if frame.session != self._session or (
            self._last_seq is not None and frame.seq < self._last_seq - _SEQ_RESTART_GAP
        ):
            if self._session is not None or self._last_seq is not None:
                self._connected = dict.fromkeys(SIDES, False)  # forces new epochs below
            self._session, self._last_seq = frame.session, None
        if self._last_seq is not None and frame.seq <= self._last_seq:
            raise StaleFrameError(f"seq {frame.seq} is not newer than {self._last_seq}")
        self._last_seq = frame.seq
        offset = recv_ns - frame.sent_ns
        self.clock_offset_ns = offset if self.clock_offset_ns is None else min(self.clock_offset_ns, offset)
        hands = {}
        for h in SIDES:
            s = frame.hands[h]
            if s.connected and not self._connected[h]:
                self._epoch[h] += 1
            self._connected[h] = s.connected
            pose = s.pose or Pose.identity()
            hands[h] = {
                "connected": s.connected,
                "epoch": self._epoch[h],
                "pose_valid": s.pose is not None,
                "position": pose.position,
                "orientation": pose.orientation,
                "trigger": s.trigger,
                "squeeze": s.squeeze,
                "stick": list(s.stick),
                **s.buttons,
                "pose_stamp_ns": recv_ns - s.pose_age_ns,
                "input_stamp_ns": recv_ns - s.input_age_ns,
            }
        self.out_seq += 1
        return {
            "stamp_ns": recv_ns,
            "frame_id": "operator",
            "seq": self.out_seq,
            "source": self.source,
            "focused": frame.focused,
            "ui_estop": frame.ui["estop"],
            "ui_release_stop": frame.ui["release_stop"],
            "ui_pause": frame.ui["pause"],
            "left": hands["left"],
            "right": hands["right"],
        }
