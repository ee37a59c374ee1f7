"""XR feed frames: parsing, and every refusal with its reason code."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from teledora.operators.xr.feed_rejection import REASONS, FeedFormatError
from teledora.operators.xr.xr_feed_format import (
    MAX_FRAME_BYTES,
    QUAT_NORM_TOLERANCE,
    TRACKING_HALF_HEIGHT_M,
    TRACKING_HALF_WIDTH_M,
    parse_frame,
)

SENT = 10_000_000_000


def hand(**kw):
    d = {"connected": True, "pose_valid": True, "position": [0.1, 1.2, -0.3], "orientation": [0, 0, 0, 1],
         "trigger": 0.5, "squeeze": 0.0, "stick": [0.0, -1.0], "primary": False, "secondary": True,
         "stick_click": False, "menu": False}
    d.update(kw)
    return d


def frame(seq=1, frame_kind="webxr", sent_ns=SENT, **kw):
    d = {"version": 1, "session": "s1", "seq": seq, "sent_ns": sent_ns, "frame": frame_kind,
         "hands": {"left": hand(), "right": {"connected": False}}}
    d.update(kw)
    return json.dumps(d)


def left(**kw):
    return {"hands": {"left": hand(**kw), "right": {"connected": False}}}


def test_webxr_frame_is_converted_to_flu():
    f = parse_frame(frame())
    lh = f.hands["left"]
    np.testing.assert_allclose(lh.pose.position, [0.3, -0.1, 1.2])
    assert lh.stick == (0.0, -1.0)  # xr-standard axes pass through (forward is negative y)
    assert lh.buttons["secondary"] and not lh.buttons["primary"]
    assert f.hands["right"].pose is None and not f.hands["right"].connected
    assert f.focused and f.ui == {"estop": False, "pause": False, "release_stop": False, "episode_start": False,
                                  "episode_keep": False, "episode_discard": False}


def test_episode_buttons_are_ui_levels():
    f = parse_frame(frame(ui={"episode_discard": True, "pause": False}))
    assert f.ui["episode_discard"] and not f.ui["episode_start"] and not f.ui["episode_keep"]


def test_flu_frame_passes_through_and_sample_stamps_default_to_the_send_stamp():
    f = parse_frame(frame(frame_kind="flu", **left(pose_ns=SENT - 100_000_000)))
    np.testing.assert_allclose(f.hands["left"].pose.position, [0.1, 1.2, -0.3])
    assert f.hands["left"].pose_ns == SENT - 100_000_000 and f.hands["left"].input_ns == SENT
    assert f.hands["right"].pose_ns == SENT


def _too_long_int() -> str:
    return frame().replace(f'"seq": 1', '"seq": 12345678901234567890123')


@pytest.mark.parametrize(
    "data, reason, message",
    [
        (b"\xff\xfe", "not_utf8", "UTF-8"),
        ("{", "not_json", "JSON"),
        ("[1, 2]", "schema", "object"),
        (b"[" * 3000, "too_deep", "deeper"),
        (b'{"a":' * 800, "too_deep", "deeper"),
        (frame(hands={"left": hand(position=[[[0]]], ), "right": {"connected": False}}), "too_deep", "deeper"),
        (b"{" + b" " * MAX_FRAME_BYTES + b"}", "oversize", "exceed"),
        (frame(seq=1).replace('"seq": 1', '"seq": NaN'), "non_finite", "finite"),
        (frame(seq=1).replace('"seq": 1', '"seq": 1e999'), "non_finite", "double"),
        (frame(**left(trigger=float("inf"))), "non_finite", "finite"),
        (frame(**left(stick=[float("nan"), 0.0])), "non_finite", "finite"),
        (_too_long_int(), "number_range", "digits"),
        (frame(seq=1).replace('"seq": 1,', '"seq": 1, "seq": 2,'), "duplicate_key", "twice"),
        (frame(version=2), "version", "version"),
        (frame(version=True), "version", "version"),
        (frame(version=1.0), "version", "version"),
        (frame(extra=1), "schema", "unknown keys"),
        (frame(seq=-1), "number_range", "seq"),
        (frame(seq=1.5), "schema", "seq"),
        (frame(sent_ns=2**63), "number_range", "sent_ns"),
        (frame(frame_kind="enu"), "schema", "frame"),
        (frame(hands={"left": hand()}), "schema", "hands"),
        (frame(**left(position=[0, 1])), "schema", "position"),
        (frame(**left(position=[0, "1", 2])), "schema", "position"),
        (frame(**left(orientation=[0, 0, 0, 0])), "quaternion_norm", "norm"),
        (frame(**left(orientation=[0, 0, 0, 2])), "quaternion_norm", "norm"),
        (frame(**left(position=[0.0, 1e308, 0.0])), "position_range", "tracking volume"),
        (frame(**left(trigger=1.5)), "number_range", "trigger"),
        (frame(**left(trigger=None)), "schema", "trigger"),
        (frame(**left(stick=[0, 3])), "number_range", "stick"),
        (frame(**left(stick=[None, None])), "schema", "stick"),
        (frame(**left(menu=1)), "schema", "menu"),
        (frame(**left(laser=True)), "schema", "unknown keys"),
        (frame(**left(pose_ns=SENT + 1)), "stamp_order", "later than sent_ns"),
        (frame(**left(input_ns=SENT + 1)), "stamp_order", "later than sent_ns"),
        (frame(**left(pose_ns=-5)), "number_range", "pose_ns"),
        (frame(ui={"estop": True, "nuke": True}), "schema", "ui"),
        (frame(ui={"episode_start": "yes"}), "schema", "ui.episode_start"),
        (frame(ui={"episode_discard": 1}), "schema", "ui.episode_discard"),
        (frame(ui={"episode": True}), "schema", "ui"),
        (frame(session="x" * 65), "schema", "session"),
    ],
)
def test_malformed_frames_are_rejected_with_a_reason(data, reason, message):
    with pytest.raises(FeedFormatError, match=message) as info:
        parse_frame(data)
    assert info.value.reason == reason and reason in REASONS


def test_a_frame_string_is_measured_in_utf8_bytes():
    pad = "é" * ((MAX_FRAME_BYTES - len(frame())) // 2 + 10)  # fits in characters, not in bytes
    data = frame(session="s").replace('"session": "s"', f'"session": "{pad}"')
    assert len(data) <= MAX_FRAME_BYTES < len(data.encode())
    with pytest.raises(FeedFormatError) as info:
        parse_frame(data)
    assert info.value.reason == "oversize"


def test_brackets_inside_strings_do_not_count_as_nesting():
    # "[[[[[" inside a string is text, and an escaped quote does not end the string
    data = frame(session='[[[[[{{{{"[[[[\\')
    assert '\\"' in data  # the quote is escaped in the JSON text
    assert parse_frame(data).session == '[[[[[{{{{"[[[[\\'


@pytest.mark.parametrize("scale, accepted", [
    (1.0, True),
    (1.0 + 0.9 * QUAT_NORM_TOLERANCE, True),
    (1.0 - 0.9 * QUAT_NORM_TOLERANCE, True),
    (1.0 + 1.1 * QUAT_NORM_TOLERANCE, False),
    (1.0 - 1.1 * QUAT_NORM_TOLERANCE, False),
])
def test_quaternion_norm_tolerance(scale, accepted):
    q = np.array([0.1, 0.2, 0.3, 0.9])
    q = q / np.linalg.norm(q) * scale
    data = frame(frame_kind="flu", **left(orientation=q.tolist()))
    if accepted:
        got = parse_frame(data).hands["left"].pose.orientation
        assert np.linalg.norm(got) == pytest.approx(1.0)  # within tolerance: normalised
        np.testing.assert_allclose(got, q / np.linalg.norm(q))
    else:
        with pytest.raises(FeedFormatError) as info:
            parse_frame(data)
        assert info.value.reason == "quaternion_norm"


W, H = TRACKING_HALF_WIDTH_M, TRACKING_HALF_HEIGHT_M


@pytest.mark.parametrize("kind, position, accepted", [
    ("flu", [W, -W, H], True),
    ("flu", [-W, W, -H], True),
    ("flu", [W + 0.01, 0, 0], False),
    ("flu", [0, -W - 0.01, 0], False),
    ("flu", [0, 0, H + 0.01], False),
    # WebXR: x right, y up, -z forward -> FLU x = -z, y = -x, z = y; the bound applies in FLU
    ("webxr", [0, H, -W], True),
    ("webxr", [0, H + 0.01, 0], False),
    ("webxr", [W + 0.01, 0, 0], False),
    ("webxr", [0, 0, W + 0.01], False),
])
def test_positions_are_bounded_by_the_tracking_volume(kind, position, accepted):
    data = frame(frame_kind=kind, **left(position=position))
    if accepted:
        parse_frame(data)
    else:
        with pytest.raises(FeedFormatError) as info:
            parse_frame(data)
        assert info.value.reason == "position_range"


def test_a_pose_that_is_not_used_is_not_read():
    # a disconnected hand, or one without a valid pose, may carry anything in its pose fields
    data = frame(hands={"left": hand(pose_valid=False, orientation=[0, 0, 0, 0]),
                        "right": hand(connected=False, position=[1e300, 0, 0])})
    f = parse_frame(data)
    assert f.hands["left"].pose is None and f.hands["right"].pose is None


def test_analog_values_within_rounding_of_their_range_are_clipped():
    f = parse_frame(frame(**left(trigger=1.0 + 1e-9, stick=[-1.0 - 1e-9, 0.5])))
    assert f.hands["left"].trigger == 1.0 and f.hands["left"].stick == (-1.0, 0.5)
    assert all(math.isfinite(v) for v in f.hands["left"].stick)
