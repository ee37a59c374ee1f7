"""The UDP feed's envelope: each datagram authenticated with the pairing token,
numbered, and refused when replayed.

Layout (big-endian), 60 bytes around the JSON frame::

    magic    4 bytes   b"TDX1"
    session  8 bytes   random per sender start
    seq      8 bytes   unsigned, strictly increasing within the session
    sent_ns  8 bytes   signed, the sender's send time on the host clock
    payload  n bytes   one feed frame (JSON, docs/xr.md), n <= MAX_FRAME_BYTES
    tag     32 bytes   HMAC-SHA256(key, everything above)

    key = HMAC-SHA256(token, b"teledora xr udp feed v1")

The receiver checks, in this order, before it reads a byte of the payload:
the length, the marker, the tag (compared in constant time), then that
``sent_ns`` lies in ``[now - replay window, now + skew tolerance]`` and that
``seq`` is above the last one accepted from the session. Sessions are
remembered while they are within the replay window, so a datagram captured
and sent again is refused either by its sequence number (its session is
still remembered) or by its age (it is older than the window); a token from
another run does not verify at all.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from dataclasses import dataclass

from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES

MAGIC = b"TDX1"
_HEADER = struct.Struct(">4s8sQq")
HEADER_BYTES = _HEADER.size
TAG_BYTES = 32
MAX_DATAGRAM_BYTES = HEADER_BYTES + MAX_FRAME_BYTES + TAG_BYTES
#: A datagram sent longer ago than this is refused (and its session may be forgotten).
REPLAY_WINDOW_NS = 2_000_000_000
#: A datagram may be stamped this far after the receiver's now (clock skew).
SKEW_TOLERANCE_NS = 50_000_000
_KEY_LABEL = b"teledora xr udp feed v1"


def feed_key(token: str) -> bytes:
    """The MAC key derived from a pairing token."""
    if not token:
        raise ValueError("the UDP feed needs a non-empty pairing token")
    return hmac.new(token.encode("utf-8"), _KEY_LABEL, hashlib.sha256).digest()


def seal(key: bytes, session: bytes, seq: int, sent_ns: int, payload: bytes) -> bytes:
    """One datagram carrying ``payload``.

    Raises:
        ValueError: a session that is not 8 bytes, a sequence number or stamp
            out of range, or a payload over :data:`MAX_FRAME_BYTES`.
    """
    if len(session) != 8:
        raise ValueError("the session id is 8 bytes")
    if len(payload) > MAX_FRAME_BYTES:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_FRAME_BYTES}")
    head = _HEADER.pack(MAGIC, session, seq, sent_ns)
    body = head + payload
    return body + hmac.new(key, body, hashlib.sha256).digest()


@dataclass(frozen=True)
class Opened:
    """A datagram that verified: its session, number, send time and payload."""

    session: bytes
    seq: int
    sent_ns: int
    payload: bytes


class EnvelopeOpener:
    """Verifies datagrams and refuses replays.

    Args:
        key: :func:`feed_key` of the pairing token.
        replay_window_ns: Oldest accepted send time, before now.
        skew_tolerance_ns: Latest accepted send time, after now.
    """

    def __init__(self, key: bytes, replay_window_ns: int = REPLAY_WINDOW_NS,
                 skew_tolerance_ns: int = SKEW_TOLERANCE_NS) -> None:
        self._key = key
        self.replay_window_ns = int(replay_window_ns)
        self.skew_tolerance_ns = int(skew_tolerance_ns)
        self._last: dict[bytes, tuple[int, int]] = {}  # session -> (last seq, newest send time accepted)

    @property
    def sessions(self) -> int:
        return len(self._last)

    def open(self, datagram: bytes, now_ns: int) -> Opened:
        """The verified content of ``datagram`` received at host time ``now_ns``.

        Raises:
            FeedRejected: ``oversize``, ``short_datagram``, ``bad_magic``,
                ``bad_mac``, ``stale_datagram``, ``future_datagram``, ``replay``.
        """
        if len(datagram) > MAX_DATAGRAM_BYTES:
            raise FeedRejected("oversize", f"datagram of {len(datagram)} bytes exceeds {MAX_DATAGRAM_BYTES}")
        if len(datagram) < HEADER_BYTES + TAG_BYTES:
            raise FeedRejected("short_datagram", f"datagram of {len(datagram)} bytes is shorter than the envelope")
        if datagram[:4] != MAGIC:
            raise FeedRejected("bad_magic", "not a teledora XR feed datagram (no TDX1 marker)")
        body, tag = datagram[:-TAG_BYTES], datagram[-TAG_BYTES:]
        if not hmac.compare_digest(hmac.new(self._key, body, hashlib.sha256).digest(), tag):
            raise FeedRejected("bad_mac", "the MAC does not verify with this run's pairing token")
        _, session, seq, sent_ns = _HEADER.unpack_from(body)
        if sent_ns < now_ns - self.replay_window_ns:
            raise FeedRejected("stale_datagram", f"sent {(now_ns - sent_ns) / 1e9:.3f} s ago, beyond the "
                                                 f"{self.replay_window_ns / 1e9:g} s replay window")
        if sent_ns > now_ns + self.skew_tolerance_ns:
            raise FeedRejected("future_datagram", f"stamped {(sent_ns - now_ns) / 1e6:.1f} ms in the future")
        self._forget(now_ns)
        last = self._last.get(session)
        if last is not None and seq <= last[0]:
            raise FeedRejected("replay", f"seq {seq} is not above {last[0]} in its session")
        self._last[session] = (seq, sent_ns if last is None else max(sent_ns, last[1]))
        return Opened(session, seq, sent_ns, body[HEADER_BYTES:])

    def _forget(self, now_ns: int) -> None:
        """Drops sessions whose every accepted datagram left the replay window:
        any of them sent again is now refused as stale."""
        old = [s for s, (_, t) in self._last.items() if t < now_ns - self.replay_window_ns]
        for s in old:
            del self._last[s]
