"""Frames to XrControllers: sample stamps on the host clock, future stamps,
epochs, duplicates, whole-or-nothing application and the disconnect message."""

from __future__ import annotations

import json

import pytest

from teledora.operators.contract.messages import encode
from teledora.operators.xr.feed_assembler import FUTURE_TOLERANCE_NS, FeedAssembler, StaleFrameError
from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.headset_clock import HOST_CLOCK, ClockEstimate
from teledora.operators.xr.xr_feed_format import parse_frame

MS = 1_000_000
SENT = 10_000 * MS


def hand(**kw):
    d = {"connected": True, "pose_valid": True, "position": [0.1, 1.2, -0.3], "orientation": [0, 0, 0, 1],
         "stick": [0.0, -1.0]}
    d.update(kw)
    return d


def frame(seq=1, sent_ns=SENT, left=None, right=None, **kw):
    d = {"version": 1, "session": "s1", "seq": seq, "sent_ns": sent_ns, "frame": "webxr",
         "hands": {"left": left or hand(), "right": right or {"connected": False}}}
    d.update(kw)
    return parse_frame(json.dumps(d))


def test_host_clock_stamps_are_the_sample_times():
    a = FeedAssembler("udp")
    msg = a.assemble(frame(left=hand(pose_ns=SENT - 50 * MS, input_ns=SENT - 20 * MS)), SENT + 3 * MS, HOST_CLOCK)
    encode("XrControllers", msg)
    assert msg["stamp_ns"] == SENT + 3 * MS  # arrival
    assert msg["left"]["pose_stamp_ns"] == SENT - 50 * MS and msg["left"]["input_stamp_ns"] == SENT - 20 * MS
    assert msg["left"]["epoch"] == 1 and msg["right"]["epoch"] == 0
    assert a.link_delay_ns == 3 * MS


@pytest.mark.parametrize("offset_ms, uncertainty_ms", [(0, 0), (7_000, 2), (-3_456, 40), (123_456_789, 15)])
def test_stamps_map_to_the_earliest_host_time_they_can_stand_for(offset_ms, uncertainty_ms):
    clock = ClockEstimate(offset_ms * MS, uncertainty_ms * MS)
    recv = SENT + offset_ms * MS + 5 * MS
    msg = FeedAssembler("webxr").assemble(frame(left=hand(pose_ns=SENT - 30 * MS)), recv, clock)
    assert msg["left"]["pose_stamp_ns"] == SENT - 30 * MS + offset_ms * MS - uncertainty_ms * MS
    assert msg["left"]["input_stamp_ns"] == SENT + offset_ms * MS - uncertainty_ms * MS


def test_page_buttons_become_their_message_fields():
    msg = FeedAssembler("webxr").assemble(frame(ui={"episode_keep": True, "estop": True}), SENT, HOST_CLOCK)
    encode("XrControllers", msg)
    assert msg["ui_episode_keep"] and msg["ui_estop"]
    assert not (msg["ui_episode_start"] or msg["ui_episode_discard"] or msg["ui_pause"] or msg["ui_release_stop"])


def test_link_delay_shows_in_the_sample_age():
    # sampled and sent at host 10 s, delivered 1 s later: the pose is 1 s old on arrival,
    # not 0 s (arrival stamping), so the teleop pose rule holds the arm
    msg = FeedAssembler("udp").assemble(frame(), SENT + 1_000 * MS, HOST_CLOCK)
    assert msg["stamp_ns"] - msg["left"]["pose_stamp_ns"] == 1_000 * MS


@pytest.mark.parametrize("ahead_ns, accepted", [
    (0, True),
    (FUTURE_TOLERANCE_NS, True),
    (FUTURE_TOLERANCE_NS + 1, False),
    (1_000_000 * MS, False),  # +1000 s
])
def test_stamps_from_the_future_beyond_the_tolerance_are_refused(ahead_ns, accepted):
    a = FeedAssembler("udp")
    recv = SENT - ahead_ns
    if accepted:
        a.assemble(frame(), recv, HOST_CLOCK)
        return
    before = a.snapshot()
    with pytest.raises(FeedRejected) as info:
        a.assemble(frame(), recv, HOST_CLOCK)
    assert info.value.reason == "future_stamp" and a.snapshot() == before


def test_a_frame_without_a_clock_mapping_is_refused():
    with pytest.raises(FeedRejected) as info:
        FeedAssembler("webxr").assemble(frame(), SENT, None)
    assert info.value.reason == "no_clock"


def test_a_stamp_mapped_below_zero_is_refused():
    with pytest.raises(FeedRejected) as info:
        FeedAssembler("webxr").assemble(frame(left=hand(pose_ns=0)), SENT, ClockEstimate(-5 * MS, 0))
    assert info.value.reason == "number_range"


def test_duplicates_and_reordered_frames_are_dropped():
    a = FeedAssembler("udp")
    a.assemble(frame(seq=5), SENT, HOST_CLOCK)
    with pytest.raises(StaleFrameError):
        a.assemble(frame(seq=5), SENT, HOST_CLOCK)
    with pytest.raises(StaleFrameError):
        a.assemble(frame(seq=3), SENT, HOST_CLOCK)
    assert a.assemble(frame(seq=6), SENT, HOST_CLOCK)["seq"] == 2


@pytest.mark.parametrize(
    "second, epochs",
    [
        (dict(seq=2), (1, 0)),  # same connection: right never connected
        (dict(seq=2, left=hand(connected=False), right=hand()), (1, 1)),
        (dict(seq=1, session="s2"), (2, 0)),  # new sender session: left reconnects
        (dict(seq=0, session="s1"), None),  # small step backwards: stale
    ],
)
def test_epochs_count_reconnects(second, epochs):
    a = FeedAssembler("udp")
    a.assemble(frame(seq=1), SENT, HOST_CLOCK)
    if epochs is None:
        with pytest.raises(StaleFrameError):
            a.assemble(frame(**second), SENT, HOST_CLOCK)
        return
    msg = a.assemble(frame(**second), SENT, HOST_CLOCK)
    assert (msg["left"]["epoch"], msg["right"]["epoch"]) == epochs


def test_refused_frames_change_nothing():
    # each of these once changed the session or the sequence before being refused
    a = FeedAssembler("udp")
    a.assemble(frame(seq=10), SENT, HOST_CLOCK)
    before = a.snapshot()
    for bad, recv, clock in [
        (frame(seq=11, session="other"), SENT - 10_000 * MS, HOST_CLOCK),  # new session, then a future stamp
        (frame(seq=1, session="other"), SENT, None),  # new session, then no clock
        (frame(seq=5000, session="s1"), SENT, ClockEstimate(-SENT - 1, 0)),  # stamps mapped below zero
    ]:
        with pytest.raises(FeedRejected):
            a.assemble(bad, recv, clock)
        assert a.snapshot() == before
    with pytest.raises(StaleFrameError):
        a.assemble(frame(seq=10), SENT, HOST_CLOCK)
    assert a.snapshot() == before
    assert a.assemble(frame(seq=11), SENT, HOST_CLOCK)["left"]["epoch"] == 1  # nothing carried over


def test_a_prepared_frame_applies_only_when_committed():
    a = FeedAssembler("udp")
    before = a.snapshot()
    pending = a.prepare(frame(seq=1), SENT, HOST_CLOCK)
    assert a.snapshot() == before and pending.message["seq"] == 1
    pending.commit()
    assert a.out_seq == 1
    stale = a.prepare(frame(seq=2), SENT, HOST_CLOCK)
    a.assemble(frame(seq=3), SENT, HOST_CLOCK)
    with pytest.raises(RuntimeError):
        stale.commit()  # prepared against a state that has moved on


def test_disconnect_reports_both_hands_gone_and_the_next_frame_starts_afresh():
    a = FeedAssembler("webxr")
    a.assemble(frame(seq=7, right=hand()), SENT, HOST_CLOCK)
    assert a.live
    gone = a.disconnect(SENT + 5 * MS)
    encode("XrControllers", gone)
    assert not gone["left"]["connected"] and not gone["right"]["connected"] and not gone["focused"]
    assert not any(v for k, v in gone.items() if k.startswith("ui_"))
    assert (gone["left"]["epoch"], gone["right"]["epoch"]) == (1, 1) and not a.live
    msg = a.assemble(frame(seq=1), SENT + 6 * MS, HOST_CLOCK)  # the same session may start over
    assert msg["left"]["epoch"] == 2


def test_new_client_bumps_epochs():
    a = FeedAssembler("webxr")
    a.assemble(frame(seq=1), SENT, HOST_CLOCK)
    a.assemble(frame(seq=2, left=hand(connected=False)), SENT, HOST_CLOCK)
    assert a.assemble(frame(seq=3), SENT, HOST_CLOCK)["left"]["epoch"] == 2
    a.new_client()
    assert a.assemble(frame(seq=1), SENT, HOST_CLOCK)["left"]["epoch"] == 3  # a new client starts its own sequence
