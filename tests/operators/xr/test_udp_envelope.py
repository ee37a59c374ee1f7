"""The UDP feed envelope: the layouts and MACs checked against an independent
HMAC-SHA256 (RFC 2104 written out with hashlib), tampering, replays within a
run and across runs (the receiver's nonce), stale and future datagrams,
session memory, and the pairing handshake."""

from __future__ import annotations

import hashlib
import struct

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from teledora.operators.xr.feed_rejection import REASONS, FeedRejected
from teledora.operators.xr.udp_envelope import (
    HEADER_BYTES,
    HELLO_BYTES,
    MAX_DATAGRAM_BYTES,
    REHELLO_BYTES,
    REPLAY_WINDOW_NS,
    SKEW_TOLERANCE_NS,
    TAG_BYTES,
    WELCOME_BYTES,
    Answer,
    EnvelopeOpener,
    ForeignNonce,
    SenderLink,
    feed_key,
    hello,
    rehello,
    seal,
    welcome,
)
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES

NOW = 1_700_000_000_000_000_000
SESSION = b"\x01\x02\x03\x04\x05\x06\x07\x08"
NONCE = bytes(range(16))
CHALLENGE = bytes(range(100, 116))
nonces = st.binary(min_size=16, max_size=16)


def rfc2104_hmac_sha256(key: bytes, msg: bytes) -> bytes:
    """HMAC-SHA256 as RFC 2104 defines it: H((K ^ opad) || H((K ^ ipad) || m)), block 64."""
    if len(key) > 64:
        key = hashlib.sha256(key).digest()
    key = key.ljust(64, b"\0")
    inner = hashlib.sha256(bytes(k ^ 0x36 for k in key) + msg).digest()
    return hashlib.sha256(bytes(k ^ 0x5C for k in key) + inner).digest()


def opener(key: bytes, nonce: bytes = NONCE) -> EnvelopeOpener:
    return EnvelopeOpener(key, nonce)


def test_layouts_and_macs_match_the_reference():
    token = "pairing-token"
    key = feed_key(token)
    assert key == rfc2104_hmac_sha256(token.encode(), b"teledora xr udp feed v1")
    d = seal(key, NONCE, SESSION, 42, NOW, b'{"x":1}')
    body = b"TDX2" + NONCE + SESSION + struct.pack(">Q", 42) + struct.pack(">q", NOW) + b'{"x":1}'
    assert d == body + rfc2104_hmac_sha256(key, body)
    h = b"TDH2" + SESSION + CHALLENGE + struct.pack(">q", NOW)
    assert hello(key, SESSION, CHALLENGE, NOW) == h + rfc2104_hmac_sha256(key, h)
    w = b"TDW2" + NONCE + CHALLENGE
    assert welcome(key, NONCE, CHALLENGE) == w + rfc2104_hmac_sha256(key, w)
    r = b"TDR2" + SESSION + struct.pack(">Q", 42)
    assert rehello(key, SESSION, 42) == r + rfc2104_hmac_sha256(key, r)
    assert (HEADER_BYTES, TAG_BYTES, HELLO_BYTES, WELCOME_BYTES, REHELLO_BYTES) == (44, 32, 68, 68, 52)
    opened = opener(key).open(d, NOW)
    assert (opened.session, opened.seq, opened.sent_ns, opened.payload) == (SESSION, 42, NOW, b'{"x":1}')


def test_the_answers_are_never_larger_than_what_they_answer():
    # a forged source address gets back no more bytes than were sent to the receiver
    assert WELCOME_BYTES <= HELLO_BYTES and REHELLO_BYTES <= HEADER_BYTES + TAG_BYTES


@settings(max_examples=300, deadline=None)
@given(payload=st.binary(max_size=200), position=st.integers(0, 10_000), flip=st.integers(1, 255), nonce=nonces)
def test_any_changed_byte_of_a_frame_fails(payload, position, flip, nonce):
    key = feed_key("t")
    d = bytearray(seal(key, nonce, SESSION, 1, NOW, payload))
    i = position % len(d)
    d[i] ^= flip
    with pytest.raises(FeedRejected) as info:
        opener(key, nonce).open(bytes(d), NOW)
    if i >= 4:
        assert info.value.reason == "bad_mac"
    else:  # a changed marker: not a frame, or a hello of the wrong length
        assert info.value.reason in {"bad_magic", "oversize", "short_datagram"}


@settings(max_examples=300, deadline=None)
@given(position=st.integers(0, HELLO_BYTES - 1), flip=st.integers(1, 255), nonce=nonces)
def test_any_changed_byte_of_a_hello_fails(position, flip, nonce):
    key = feed_key("t")
    d = bytearray(hello(key, SESSION, CHALLENGE, NOW))
    d[position] ^= flip
    with pytest.raises(FeedRejected) as info:
        opener(key, nonce).open(bytes(d), NOW)
    assert info.value.reason in ({"bad_mac"} if position >= 4 else {"bad_magic", "short_datagram"})


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=MAX_DATAGRAM_BYTES + 10), marker=st.sampled_from([b"", b"TDX2", b"TDH2"]))
def test_random_bytes_are_refused_with_a_reason(data, marker):
    with pytest.raises(FeedRejected) as info:
        opener(feed_key("t")).open(marker + data, NOW)
    assert info.value.reason in {"oversize", "short_datagram", "bad_magic", "bad_mac"}


def test_another_token_does_not_verify():
    for d in (seal(feed_key("other run"), NONCE, SESSION, 1, NOW, b"{}"),
              hello(feed_key("other run"), SESSION, CHALLENGE, NOW)):
        with pytest.raises(FeedRejected) as info:
            opener(feed_key("this run")).open(d, NOW)
        assert info.value.reason == "bad_mac"


@settings(max_examples=200, deadline=None)
@given(before=nonces, after=nonces, seq=st.integers(0, 2**64 - 1), payload=st.binary(max_size=100),
       age_ns=st.integers(0, REPLAY_WINDOW_NS))
def test_a_frame_of_an_earlier_run_never_opens_and_is_answered_with_a_rehello(before, after, seq, payload, age_ns):
    """A receiver restarted with the same token draws a new nonce: a frame
    captured before the restart is refused however fresh its stamp and however
    new its session or number, and the answer tells its sender to pair again."""
    assume(before != after)
    key = feed_key("fixed token")
    captured = seal(key, before, SESSION, seq, NOW - age_ns, payload)
    assert opener(key, before).open(captured, NOW).payload == payload  # the first run took it
    with pytest.raises(ForeignNonce) as info:
        opener(key, after).open(captured, NOW)
    assert info.value.reason == "foreign_nonce" and "foreign_nonce" in REASONS
    assert info.value.reply == rehello(key, SESSION, seq)


def test_each_receiver_draws_its_own_nonce():
    key = feed_key("t")
    assert len({EnvelopeOpener(key).nonce for _ in range(50)}) == 50


def test_a_hello_is_answered_with_the_nonce_bound_to_its_challenge():
    key = feed_key("t")
    answer = opener(key).open(hello(key, SESSION, CHALLENGE, NOW), NOW)
    assert answer == Answer(SESSION, welcome(key, NONCE, CHALLENGE))
    for sent, reason in ((NOW - REPLAY_WINDOW_NS - 1, "stale_datagram"), (NOW + SKEW_TOLERANCE_NS + 1, "future_datagram")):
        with pytest.raises(FeedRejected) as info:
            opener(key).open(hello(key, SESSION, CHALLENGE, sent), NOW)
        assert info.value.reason == reason
    with pytest.raises(FeedRejected) as info:
        opener(key).open(hello(key, SESSION, CHALLENGE, NOW) + b"\0", NOW)
    assert info.value.reason == "oversize"


def test_sequence_numbers_must_rise_within_a_session():
    key = feed_key("t")
    op = opener(key)
    first = seal(key, NONCE, SESSION, 5, NOW, b"{}")
    op.open(first, NOW)
    for replayed in (first, seal(key, NONCE, SESSION, 4, NOW, b"{}")):
        with pytest.raises(FeedRejected) as info:
            op.open(replayed, NOW + 1)
        assert info.value.reason == "replay"
    op.open(seal(key, NONCE, SESSION, 6, NOW, b"{}"), NOW + 2)
    op.open(seal(key, NONCE, b"another!", 1, NOW, b"{}"), NOW + 3)  # each session has its own numbers
    assert op.sessions == 2


@pytest.mark.parametrize("sent_offset_ns, reason", [
    (-REPLAY_WINDOW_NS, None),
    (-REPLAY_WINDOW_NS - 1, "stale_datagram"),
    (SKEW_TOLERANCE_NS, None),
    (SKEW_TOLERANCE_NS + 1, "future_datagram"),
    (1000 * 10**9, "future_datagram"),
])
def test_send_time_window(sent_offset_ns, reason):
    key = feed_key("t")
    d = seal(key, NONCE, SESSION, 1, NOW + sent_offset_ns, b"{}")
    if reason is None:
        opener(key).open(d, NOW)
        return
    with pytest.raises(FeedRejected) as info:
        opener(key).open(d, NOW)
    assert info.value.reason == reason


def test_a_forgotten_session_cannot_be_replayed():
    key = feed_key("t")
    op = opener(key)
    captured = seal(key, NONCE, SESSION, 1, NOW, b"{}")
    op.open(captured, NOW)
    later = NOW + REPLAY_WINDOW_NS + 1
    op.open(seal(key, NONCE, b"newcomer", 1, later, b"{}"), later)  # prunes the old session
    assert op.sessions == 1
    with pytest.raises(FeedRejected) as info:
        op.open(captured, later)
    assert info.value.reason == "stale_datagram"


def test_seal_refuses_what_the_receiver_would_refuse():
    key = feed_key("t")
    with pytest.raises(ValueError):
        seal(key, NONCE, b"short", 1, NOW, b"{}")
    with pytest.raises(ValueError):
        seal(key, b"short", SESSION, 1, NOW, b"{}")
    with pytest.raises(ValueError):
        seal(key, NONCE, SESSION, 1, NOW, b"x" * (MAX_FRAME_BYTES + 1))
    with pytest.raises(ValueError):
        feed_key("")
    with pytest.raises(ValueError):
        EnvelopeOpener(key, b"short")


class Counting:
    """A deterministic random source for the sender's session and challenges."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, size: int) -> bytes:
        self.n += 1
        return bytes([self.n]) * size


def test_a_sender_pairs_with_the_welcome_to_its_own_hello_only():
    key = feed_key("t")
    link = SenderLink(key, random_bytes=Counting())
    receiver = opener(key)
    with pytest.raises(RuntimeError):
        link.seal(b"{}", NOW)  # no frame before pairing
    first = link.hello(NOW)
    assert link.hello(NOW + 1)[4:28] == first[4:28]  # a resend keeps the attempt's challenge
    other = SenderLink(key, random_bytes=lambda n: b"\xee" * n)
    assert link.take(receiver.open(other.hello(NOW), NOW).reply) is None  # a welcome to another sender
    assert link.take(welcome(feed_key("other token"), NONCE, first[12:28])) is None
    assert not link.paired
    assert link.take(receiver.open(first, NOW).reply) == "paired"
    assert link.nonce == NONCE
    opened = receiver.open(link.seal(b'{"a":1}', NOW), NOW)
    assert (opened.session, opened.seq, opened.payload) == (link.session, 1, b'{"a":1}')


@settings(max_examples=100, deadline=None)
@given(restarts=st.lists(st.integers(0, 5), min_size=1, max_size=6))
def test_a_sender_follows_its_receiver_across_restarts(restarts):
    """Over any history of frames and receiver restarts: each frame sent after a
    restart is refused once with a rehello, the sender pairs again, every later
    frame opens, and a rehello answering a frame from before the last pairing
    (a replayed one) changes nothing."""
    key = feed_key("t")
    link = SenderLink(key)
    runs = 0
    receiver = EnvelopeOpener(key, bytes([runs]) * 16)
    stale_rehellos: list[bytes] = []
    for frames_before_restart in restarts:
        for _ in range(frames_before_restart):
            if not link.paired:
                assert link.take(receiver.open(link.hello(NOW), NOW).reply) == "paired"
            receiver.open(link.seal(b"{}", NOW), NOW)
            for old in stale_rehellos:
                assert link.take(old) is None and link.paired
        runs += 1
        receiver = EnvelopeOpener(key, bytes([runs]) * 16)  # restarted, the same token
        if link.paired:
            with pytest.raises(ForeignNonce) as info:
                receiver.open(link.seal(b"{}", NOW), NOW)
            assert link.take(info.value.reply) == "unpaired"
            stale_rehellos.append(info.value.reply)
        assert not link.paired
