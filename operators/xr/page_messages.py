"""The WebXR page's control messages: the hello that pairs it, the pongs that
map its clock. Feed frames are the other kind of message it sends
(:mod:`teledora.operators.xr.xr_feed_format`); a control message is told
apart by its ``type`` key, which a frame never has.

    {"type": "hello", "token": "...", "session": "a1b2"}      first message, at most 1 KiB
    {"type": "pong", "id": 7, "page_ns": 1700000000123456789}  answer to the host's ping 7

Both are read with the same bounds as frames (:mod:`strict_json`), one
level deep, unknown keys refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from teledora.operators.xr.feed_rejection import FeedFormatError
from teledora.operators.xr.strict_json import loads_bounded
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES, MAX_SESSION_CHARS, MAX_STAMP_NS

MAX_HELLO_BYTES = 1024
MAX_TOKEN_CHARS = 256


@dataclass(frozen=True)
class Hello:
    token: str
    session: str


@dataclass(frozen=True)
class Pong:
    ping_id: int
    page_ns: int


def _int(d: dict[str, Any], key: str, hi: int) -> int:
    v = d.get(key)
    if type(v) is not int or not 0 <= v <= hi:
        raise FeedFormatError("bad_control", f"{key} must be an integer in [0, {hi}]")
    return v


def parse_hello(data: str | bytes) -> Hello:
    """The page's first message.

    Raises:
        FeedFormatError: reason ``bad_hello`` (anything but a well-formed
            hello), or the JSON reader's reason (``oversize``, ``too_deep``, ...).
    """
    d = loads_bounded(data, MAX_HELLO_BYTES, 1)
    if not isinstance(d, dict) or d.get("type") != "hello":
        raise FeedFormatError("bad_hello", "the first message must be a hello with the pairing token")
    if not set(d) <= {"type", "token", "session"}:
        raise FeedFormatError("bad_hello", "a hello has only type, token and session")
    token, session = d.get("token"), d.get("session", "")
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
        raise FeedFormatError("bad_hello", "the hello's token must be a string")
    if not isinstance(session, str) or len(session) > MAX_SESSION_CHARS:
        raise FeedFormatError("bad_hello", f"session must be a string of at most {MAX_SESSION_CHARS} characters")
    return Hello(token, session)


def parse_control(data: str | bytes) -> Pong | None:
    """A pong, or None when ``data`` is not a control message (then it is a
    frame candidate, parsed and judged by the feed loop).

    Raises:
        FeedFormatError: reason ``bad_control`` for a message with a ``type``
            that is not a well-formed pong.
    """
    try:
        d = loads_bounded(data, MAX_FRAME_BYTES, 1)
    except FeedFormatError:
        return None  # deeper or malformed: not a control message; the frame parser says what is wrong
    if not isinstance(d, dict) or "type" not in d:
        return None
    if d["type"] != "pong" or set(d) != {"type", "id", "page_ns"}:
        raise FeedFormatError("bad_control", "a control message after the hello must be a pong {type, id, page_ns}")
    return Pong(_int(d, "id", MAX_STAMP_NS), _int(d, "page_ns", MAX_STAMP_NS))
