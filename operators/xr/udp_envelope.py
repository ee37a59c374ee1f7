"""The UDP feed's envelope: a pairing handshake, then each datagram
authenticated with the pairing token, bound to the receiver's run, numbered,
and refused when replayed.

Every receiver start draws a fresh random ``nonce``. A sender learns it with
an authenticated hello before its first frame, and every frame's MAC covers
it, so a datagram captured before the receiver restarted (or addressed to
another receiver with the same token) never opens. Four kinds of datagram,
each told apart by its marker (all integers big-endian)::

    hello    sender -> receiver, 68 bytes
        b"TDH2" | session 8 | challenge 16 | sent_ns 8 | tag 32
    welcome  receiver -> sender, 68 bytes (never more than the hello it answers)
        b"TDW2" | nonce 16 | challenge 16 | tag 32
    frame    sender -> receiver, 76 bytes + the JSON frame
        b"TDX2" | nonce 16 | session 8 | seq 8 | sent_ns 8 | payload n | tag 32
    rehello  receiver -> sender, 52 bytes, answering a frame of a past nonce
        b"TDR2" | session 8 | seq 8 | tag 32

    tag = HMAC-SHA256(key, everything before it)
    key = HMAC-SHA256(token, b"teledora xr udp feed v1")

``session`` is random per sender start, ``seq`` strictly increasing within
it, ``sent_ns`` the sender's send time on the host clock, ``challenge``
random per pairing attempt (the welcome echoes it, so a sender takes no
welcome it did not ask for), ``payload`` at most :data:`MAX_FRAME_BYTES`.

The receiver checks a frame, in this order, before it reads a byte of the
payload: the length, the marker, the tag (in constant time), that the nonce is
its own, that ``sent_ns`` lies in ``[now - replay window, now + skew
tolerance]``, and that ``seq`` is above the last one accepted from the
session. Within one run, a captured frame sent again is refused by its
sequence number while its session is remembered and by its age after that;
across runs, by its nonce. Hellos pass the same tag and time checks.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import struct
from dataclasses import dataclass
from typing import Callable

from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES

MAGIC = b"TDX2"
HELLO_MAGIC = b"TDH2"
WELCOME_MAGIC = b"TDW2"
REHELLO_MAGIC = b"TDR2"
NONCE_BYTES = 16
SESSION_BYTES = 8
CHALLENGE_BYTES = 16
TAG_BYTES = 32
_HEADER = struct.Struct(f">4s{NONCE_BYTES}s{SESSION_BYTES}sQq")
_HELLO = struct.Struct(f">4s{SESSION_BYTES}s{CHALLENGE_BYTES}sq")
_WELCOME = struct.Struct(f">4s{NONCE_BYTES}s{CHALLENGE_BYTES}s")
_REHELLO = struct.Struct(f">4s{SESSION_BYTES}sQ")
HEADER_BYTES = _HEADER.size
HELLO_BYTES = _HELLO.size + TAG_BYTES
WELCOME_BYTES = _WELCOME.size + TAG_BYTES
REHELLO_BYTES = _REHELLO.size + TAG_BYTES
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


def _tagged(key: bytes, body: bytes) -> bytes:
    return body + hmac.new(key, body, hashlib.sha256).digest()


def _verifies(key: bytes, datagram: bytes) -> bool:
    body, tag = datagram[:-TAG_BYTES], datagram[-TAG_BYTES:]
    return hmac.compare_digest(hmac.new(key, body, hashlib.sha256).digest(), tag)


def _check_len(name: str, value: bytes, n: int) -> None:
    if len(value) != n:
        raise ValueError(f"the {name} is {n} bytes")


def seal(key: bytes, nonce: bytes, session: bytes, seq: int, sent_ns: int, payload: bytes) -> bytes:
    """One frame datagram carrying ``payload`` to the receiver whose nonce is ``nonce``.

    Raises:
        ValueError: a nonce or session of the wrong size, a sequence number or
            stamp out of range, or a payload over :data:`MAX_FRAME_BYTES`.
    """
    _check_len("nonce", nonce, NONCE_BYTES)
    _check_len("session id", session, SESSION_BYTES)
    if len(payload) > MAX_FRAME_BYTES:
        raise ValueError(f"payload of {len(payload)} bytes exceeds {MAX_FRAME_BYTES}")
    return _tagged(key, _HEADER.pack(MAGIC, nonce, session, seq, sent_ns) + payload)


def hello(key: bytes, session: bytes, challenge: bytes, sent_ns: int) -> bytes:
    """A sender's request for the receiver's nonce."""
    _check_len("session id", session, SESSION_BYTES)
    _check_len("challenge", challenge, CHALLENGE_BYTES)
    return _tagged(key, _HELLO.pack(HELLO_MAGIC, session, challenge, sent_ns))


def welcome(key: bytes, nonce: bytes, challenge: bytes) -> bytes:
    """The receiver's answer to a hello: its nonce, bound to the hello's challenge."""
    _check_len("nonce", nonce, NONCE_BYTES)
    _check_len("challenge", challenge, CHALLENGE_BYTES)
    return _tagged(key, _WELCOME.pack(WELCOME_MAGIC, nonce, challenge))


def rehello(key: bytes, session: bytes, seq: int) -> bytes:
    """The receiver's answer to a frame of another nonce: pair again."""
    _check_len("session id", session, SESSION_BYTES)
    return _tagged(key, _REHELLO.pack(REHELLO_MAGIC, session, seq))


@dataclass(frozen=True)
class Opened:
    """A frame datagram that verified: its session, number, send time and payload."""

    session: bytes
    seq: int
    sent_ns: int
    payload: bytes


@dataclass(frozen=True)
class Answer:
    """A hello that verified: ``reply`` (the welcome) goes back to its sender."""

    session: bytes
    reply: bytes


class ForeignNonce(FeedRejected):
    """A frame that verifies with the token but carries another run's nonce:
    refused, and ``reply`` (a rehello) tells its sender to pair again."""

    def __init__(self, message: str, reply: bytes) -> None:
        super().__init__("foreign_nonce", message)
        self.reply = reply


class EnvelopeOpener:
    """The receiver's side: answers hellos, verifies frames and refuses replays.

    Args:
        key: :func:`feed_key` of the pairing token.
        nonce: This run's nonce (:data:`NONCE_BYTES`); drawn at random when None.
        replay_window_ns: Oldest accepted send time, before now.
        skew_tolerance_ns: Latest accepted send time, after now.
    """

    def __init__(self, key: bytes, nonce: bytes | None = None, replay_window_ns: int = REPLAY_WINDOW_NS,
                 skew_tolerance_ns: int = SKEW_TOLERANCE_NS) -> None:
        self._key = key
        self.nonce = secrets.token_bytes(NONCE_BYTES) if nonce is None else bytes(nonce)
        _check_len("nonce", self.nonce, NONCE_BYTES)
        self.replay_window_ns = int(replay_window_ns)
        self.skew_tolerance_ns = int(skew_tolerance_ns)
        self._last: dict[bytes, tuple[int, int]] = {}  # session -> (last seq, newest send time accepted)

    @property
    def sessions(self) -> int:
        return len(self._last)

    def open(self, datagram: bytes, now_ns: int) -> Opened | Answer:
        """The verified frame in ``datagram``, or the welcome answering a hello,
        received at host time ``now_ns``.

        Raises:
            FeedRejected: ``oversize``, ``short_datagram``, ``bad_magic``,
                ``bad_mac``, ``foreign_nonce`` (a :class:`ForeignNonce`),
                ``stale_datagram``, ``future_datagram``, ``replay``.
        """
        if len(datagram) > MAX_DATAGRAM_BYTES:
            raise FeedRejected("oversize", f"datagram of {len(datagram)} bytes exceeds {MAX_DATAGRAM_BYTES}")
        if datagram[:4] == HELLO_MAGIC:
            return self._answer(datagram, now_ns)
        if len(datagram) < HEADER_BYTES + TAG_BYTES:
            raise FeedRejected("short_datagram", f"datagram of {len(datagram)} bytes is shorter than the envelope")
        if datagram[:4] != MAGIC:
            raise FeedRejected("bad_magic", "not a teledora XR feed datagram (no TDX2 or TDH2 marker)")
        if not _verifies(self._key, datagram):
            raise FeedRejected("bad_mac", "the MAC does not verify with this run's pairing token")
        _, nonce, session, seq, sent_ns = _HEADER.unpack_from(datagram)
        if not hmac.compare_digest(nonce, self.nonce):
            raise ForeignNonce("sealed for another receiver run (captured earlier, or a sender to pair again)",
                               rehello(self._key, session, seq))
        self._check_time(sent_ns, now_ns)
        self._forget(now_ns)
        last = self._last.get(session)
        if last is not None and seq <= last[0]:
            raise FeedRejected("replay", f"seq {seq} is not above {last[0]} in its session")
        self._last[session] = (seq, sent_ns if last is None else max(sent_ns, last[1]))
        return Opened(session, seq, sent_ns, datagram[HEADER_BYTES:-TAG_BYTES])

    def _answer(self, datagram: bytes, now_ns: int) -> Answer:
        if len(datagram) != HELLO_BYTES:
            raise FeedRejected("short_datagram" if len(datagram) < HELLO_BYTES else "oversize",
                               f"hello of {len(datagram)} bytes, not {HELLO_BYTES}")
        if not _verifies(self._key, datagram):
            raise FeedRejected("bad_mac", "the hello's MAC does not verify with this run's pairing token")
        _, session, challenge, sent_ns = _HELLO.unpack_from(datagram)
        self._check_time(sent_ns, now_ns)
        return Answer(session, welcome(self._key, self.nonce, challenge))

    def _check_time(self, sent_ns: int, now_ns: int) -> None:
        if sent_ns < now_ns - self.replay_window_ns:
            raise FeedRejected("stale_datagram", f"sent {(now_ns - sent_ns) / 1e9:.3f} s ago, beyond the "
                                                 f"{self.replay_window_ns / 1e9:g} s replay window")
        if sent_ns > now_ns + self.skew_tolerance_ns:
            raise FeedRejected("future_datagram", f"stamped {(sent_ns - now_ns) / 1e6:.1f} ms in the future")

    def _forget(self, now_ns: int) -> None:
        """Drops sessions whose every accepted datagram left the replay window:
        any of them sent again is now refused as stale."""
        old = [s for s, (_, t) in self._last.items() if t < now_ns - self.replay_window_ns]
        for s in old:
            del self._last[s]


class SenderLink:
    """The sender's side: pairs with a receiver and seals frames for it.

    ``hello`` starts a pairing attempt (a fresh challenge; call it again to
    resend); ``take`` reads what the receiver sent back; once ``paired``,
    ``seal`` numbers and seals each frame for the receiver's nonce. A rehello
    that echoes a frame sent since the last pairing unpairs the link (the
    receiver restarted); one about earlier frames is stale and ignored.

    Args:
        key: :func:`feed_key` of the pairing token.
        session: This sender's session id (:data:`SESSION_BYTES`); random when None.
        random_bytes: Source of the session id and the challenges.
    """

    def __init__(self, key: bytes, session: bytes | None = None,
                 random_bytes: Callable[[int], bytes] = secrets.token_bytes) -> None:
        self._key, self._random = key, random_bytes
        self.session = random_bytes(SESSION_BYTES) if session is None else bytes(session)
        _check_len("session id", self.session, SESSION_BYTES)
        self.seq = 0
        self.nonce: bytes | None = None
        self._challenge: bytes | None = None
        self._paired_at_seq = 0

    @property
    def paired(self) -> bool:
        return self.nonce is not None

    def hello(self, now_ns: int) -> bytes:
        """A hello for the current pairing attempt (a new one when none is under way)."""
        if self._challenge is None:
            self._challenge = self._random(CHALLENGE_BYTES)
        return hello(self._key, self.session, self._challenge, now_ns)

    def unpair(self) -> None:
        """Forget the receiver's nonce: the next frame needs a new pairing."""
        self.nonce = None

    def take(self, datagram: bytes) -> str | None:
        """Reads a datagram from the receiver: ``"paired"`` for the welcome to
        this attempt's hello, ``"unpaired"`` for a rehello about a frame sent
        since the last pairing, None for anything else (ignored)."""
        if len(datagram) == WELCOME_BYTES and datagram[:4] == WELCOME_MAGIC and self._challenge is not None:
            if _verifies(self._key, datagram):
                _, nonce, challenge = _WELCOME.unpack_from(datagram)
                if hmac.compare_digest(challenge, self._challenge):
                    self.nonce, self._challenge, self._paired_at_seq = nonce, None, self.seq
                    return "paired"
        if len(datagram) == REHELLO_BYTES and datagram[:4] == REHELLO_MAGIC and self.nonce is not None:
            if _verifies(self._key, datagram):
                _, session, seq = _REHELLO.unpack_from(datagram)
                if session == self.session and self._paired_at_seq < seq <= self.seq:
                    self.nonce = None
                    return "unpaired"
        return None

    def seal(self, payload: bytes, sent_ns: int, seq: int | None = None) -> bytes:
        """The next frame datagram (``seq`` overrides the numbering, e.g. for a
        recording's own numbers; it must still rise)."""
        if self.nonce is None:
            raise RuntimeError("not paired: send hello() and take() the welcome first")
        self.seq = self.seq + 1 if seq is None else int(seq)
        return seal(self._key, self.nonce, self.session, self.seq, sent_ns, payload)
