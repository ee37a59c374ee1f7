"""The UDP feed envelope: the layout and MAC checked against an independent
HMAC-SHA256 (RFC 2104 written out with hashlib), tampering, replays, stale and
future datagrams, and session memory."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.udp_envelope import (
    HEADER_BYTES,
    MAX_DATAGRAM_BYTES,
    REPLAY_WINDOW_NS,
    SKEW_TOLERANCE_NS,
    TAG_BYTES,
    EnvelopeOpener,
    feed_key,
    seal,
)
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES

NOW = 1_700_000_000_000_000_000
SESSION = b"\x01\x02\x03\x04\x05\x06\x07\x08"


def rfc2104_hmac_sha256(key: bytes, msg: bytes) -> bytes:
    """HMAC-SHA256 as RFC 2104 defines it: H((K ^ opad) || H((K ^ ipad) || m)), block 64."""
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    key = key.ljust(64, b"\0")
    inner = hashlib.sha256(bytes(k ^ 0x36 for k in key) + msg).digest()
    return hashlib.sha256(bytes(k ^ 0x5C for k in key) + inner).digest()


def test_layout_and_mac_match_the_reference():
    token = "pairing-token"
    key = feed_key(token)
    assert key == rfc2104_hmac_sha256(token.encode(), b"teledora xr udp feed v1")
    d = seal(key, SESSION, 42, NOW, b'{"x":1}')
    body = b"TDX1" + SESSION + struct.pack(">Q", 42) + struct.pack(">q", NOW) + b'{"x":1}'
    assert d == body + rfc2104_hmac_sha256(key, body)
    assert HEADER_BYTES == 28 and TAG_BYTES == 32
    opened = EnvelopeOpener(key).open(d, NOW)
    assert (opened.session, opened.seq, opened.sent_ns, opened.payload) == (SESSION, 42, NOW, b'{"x":1}')


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=200), position=st.integers(0, 10_000), flip=st.integers(1, 255))
def test_any_changed_byte_fails_the_mac(payload, position, flip):
    key = feed_key("t")
    d = bytearray(seal(key, SESSION, 1, NOW, payload))
    i = position % len(d)
    d[i] ^= flip
    with pytest.raises(FeedRejected) as info:
        EnvelopeOpener(key).open(bytes(d), NOW)
    assert info.value.reason == ("bad_magic" if i < 4 else "bad_mac")


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=MAX_DATAGRAM_BYTES + 10))
def test_random_bytes_are_refused_with_a_reason(data):
    with pytest.raises(FeedRejected) as info:
        EnvelopeOpener(feed_key("t")).open(data, NOW)
    assert info.value.reason in {"oversize", "short_datagram", "bad_magic", "bad_mac"}


def test_another_token_does_not_verify():
    d = seal(feed_key("other run"), SESSION, 1, NOW, b"{}")
    with pytest.raises(FeedRejected) as info:
        EnvelopeOpener(feed_key("this run")).open(d, NOW)
    assert info.value.reason == "bad_mac"


def test_sequence_numbers_must_rise_within_a_session():
    key = feed_key("t")
    opener = EnvelopeOpener(key)
    first = seal(key, SESSION, 5, NOW, b"{}")
    opener.open(first, NOW)
    for replayed in (first, seal(key, SESSION, 4, NOW, b"{}")):
        with pytest.raises(FeedRejected) as info:
            opener.open(replayed, NOW + 1)
        assert info.value.reason == "replay"
    opener.open(seal(key, SESSION, 6, NOW, b"{}"), NOW + 2)
    opener.open(seal(key, b"another!", 1, NOW, b"{}"), NOW + 3)  # each session has its own numbers
    assert opener.sessions == 2


@pytest.mark.parametrize("sent_offset_ns, reason", [
    (-REPLAY_WINDOW_NS, None),
    (-REPLAY_WINDOW_NS - 1, "stale_datagram"),
    (SKEW_TOLERANCE_NS, None),
    (SKEW_TOLERANCE_NS + 1, "future_datagram"),
    (1000 * 10**9, "future_datagram"),
])
def test_send_time_window(sent_offset_ns, reason):
    key = feed_key("t")
    d = seal(key, SESSION, 1, NOW + sent_offset_ns, b"{}")
    if reason is None:
        EnvelopeOpener(key).open(d, NOW)
        return
    with pytest.raises(FeedRejected) as info:
        EnvelopeOpener(key).open(d, NOW)
    assert info.value.reason == reason


def test_a_forgotten_session_cannot_be_replayed():
    key = feed_key("t")
    opener = EnvelopeOpener(key)
    captured = seal(key, SESSION, 1, NOW, b"{}")
    opener.open(captured, NOW)
    later = NOW + REPLAY_WINDOW_NS + 1
    opener.open(seal(key, b"newcomer", 1, later, b"{}"), later)  # prunes the old session
    assert opener.sessions == 1
    with pytest.raises(FeedRejected) as info:
        opener.open(captured, later)
    assert info.value.reason == "stale_datagram"


def test_seal_refuses_what_the_receiver_would_refuse():
    key = feed_key("t")
    with pytest.raises(ValueError):
        seal(key, b"short", 1, NOW, b"{}")
    with pytest.raises(ValueError):
        seal(key, SESSION, 1, NOW, b"x" * (MAX_FRAME_BYTES + 1))
    with pytest.raises(ValueError):
        feed_key("")
