"""XR feed frames: parsing/validation and assembly into XrControllers."""

from __future__ import annotations

import json

import numpy as np
import pytest

from teledora.operators.contract.messages import encode
from teledora.operators.xr.xr_feed_format import (
    MAX_FRAME_BYTES,
    FeedAssembler,
    FeedFormatError,
    StaleFrameError,
    parse_frame,
)


def hand(**kw):
    d = {"connected": True, "pose_valid": True, "position": [0.1, 1.2, -0.3], "orientation": [0, 0, 0, 1],
         "trigger": 0.5, "squeeze": 0.0, "stick": [0.0, -1.0], "primary": False, "secondary": True,
         "stick_click": False, "menu": False}
    d.update(kw)
    return d


def frame(seq=1, frame_kind="webxr", sent_ns=10_000_000_000, **kw):
    d = {"version": 1, "session": "s1", "seq": seq, "sent_ns": sent_ns, "frame": frame_kind,
         "hands": {"left": hand(), "right": hand(connected=False)}}
    d.update(kw)
    return json.dumps(d)


def test_webxr_frame_is_converted_to_flu():
    f = parse_frame(frame())
    left = f.hands["left"]
    np.testing.assert_allclose(left.pose.position, [0.3, -0.1, 1.2])
    assert left.stick == (0.0, -1.0)  # xr-standard axes pass through (forward is negative y)
    assert left.buttons["secondary"] and not left.buttons["primary"]
    assert f.hands["right"].pose is None and not f.hands["right"].connected
    assert f.focused and f.ui == {"estop": False, "pause": False, "release_stop": False}


def test_flu_frame_passes_through_and_ages_use_sender_clock():
    f = parse_frame(frame(frame_kind="flu", hands={"left": hand(pose_ns=9_900_000_000), "right": hand()}))
    np.testing.assert_allclose(f.hands["left"].pose.position, [0.1, 1.2, -0.3])
    assert f.hands["left"].stick == (0.0, -1.0)
    assert f.hands["left"].pose_age_ns == 100_000_000 and f.hands["left"].input_age_ns == 0


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\xff\xfe", "not JSON"),
        ("[1, 2]", "object"),
        (frame(version=2), "version"),
        (frame(extra=1), "unknown keys"),
        (frame(seq=-1), "seq"),
        (frame(seq=1.5), "seq"),
        (frame(frame_kind="enu"), "frame"),
        (frame(hands={"left": hand()}), "hands"),
        (frame(hands={"left": hand(position=[0, 1]), "right": hand()}), "position"),
        (frame(hands={"left": hand(orientation=[0, 0, 0, 0]), "right": hand()}), "quaternion"),
        (frame(hands={"left": hand(trigger=1.5), "right": hand()}), "trigger"),
        (frame(hands={"left": hand(trigger=float("nan")), "right": hand()}), "trigger"),
        (frame(hands={"left": hand(stick=[0, 3]), "right": hand()}), "stick"),
        (frame(hands={"left": hand(menu=1), "right": hand()}), "menu"),
        (frame(hands={"left": hand(laser=True), "right": hand()}), "unknown keys"),
        (frame(ui={"estop": True, "nuke": True}), "ui"),
        (b"{" + b" " * MAX_FRAME_BYTES + b"}", "exceeds"),
    ],
)
def test_malformed_frames_are_rejected_with_a_reason(data, message):
    with pytest.raises(FeedFormatError, match=message):
        parse_frame(data)


def test_null_analog_values_count_as_zero():
    f = parse_frame(frame(hands={"left": hand(stick=[None, None], trigger=None), "right": hand()}))
    assert f.hands["left"].stick == (0.0, 0.0) and f.hands["left"].trigger == 0.0


def test_assembler_builds_contract_messages_on_the_host_clock():
    a = FeedAssembler("udp")
    msg = a.assemble(parse_frame(frame(frame_kind="flu", hands={"left": hand(pose_ns=9_950_000_000), "right": hand()})), 123_000_000_000)
    encode("XrControllers", msg)
    assert msg["left"]["pose_stamp_ns"] == 123_000_000_000 - 50_000_000
    assert msg["left"]["epoch"] == 1 and msg["right"]["epoch"] == 1
    assert a.clock_offset_ns == 123_000_000_000 - 10_000_000_000


def test_assembler_drops_duplicates_and_reordered_frames():
    a = FeedAssembler("udp")
    a.assemble(parse_frame(frame(seq=5)), 1)
    with pytest.raises(StaleFrameError):
        a.assemble(parse_frame(frame(seq=5)), 2)
    with pytest.raises(StaleFrameError):
        a.assemble(parse_frame(frame(seq=3)), 3)
    a.assemble(parse_frame(frame(seq=6)), 4)


@pytest.mark.parametrize(
    "second, epochs",
    [
        (dict(seq=2), (1, 0)),  # same connection: right never connected
        (dict(seq=2, hands={"left": hand(connected=False), "right": hand()}), (1, 1)),
        (dict(seq=1, session="s2"), (2, 0)),  # new sender session: left reconnects
        (dict(seq=0, session="s1"), None),  # small step backwards: stale
    ],
)
def test_epochs_count_reconnects(second, epochs):
    a = FeedAssembler("udp")
    a.assemble(parse_frame(frame(seq=1)), 1)
    if epochs is None:
        with pytest.raises(StaleFrameError):
            a.assemble(parse_frame(frame(**second)), 2)
        return
    msg = a.assemble(parse_frame(frame(**second)), 2)
    assert (msg["left"]["epoch"], msg["right"]["epoch"]) == epochs


def test_reconnect_after_disconnect_and_new_client_bump_epochs():
    a = FeedAssembler("webxr")
    a.assemble(parse_frame(frame(seq=1)), 1)
    a.assemble(parse_frame(frame(seq=2, hands={"left": hand(connected=False), "right": hand(connected=False)})), 2)
    msg = a.assemble(parse_frame(frame(seq=3)), 3)
    assert msg["left"]["epoch"] == 2
    a.new_client()
    msg = a.assemble(parse_frame(frame(seq=1)), 4)  # a new client starts its own sequence
    assert msg["left"]["epoch"] == 3

