"""Latest-frame-only pacing of the headset's camera panels."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.xr.camera_view import CameraGate, LatencyStats, frame_message, split_frame_message


def test_one_frame_in_flight_and_only_the_newest_goes() -> None:
    g = CameraGate()
    assert not g.ready(0)
    g.offer(1)
    assert g.ready(0)
    g.mark_sent(1, 0)
    for seq in (2, 3, 4):
        g.offer(seq)
        assert not g.ready(10), "the page has not shown frame 1 yet"
    assert g.mark_shown(1)
    assert g.ready(20)
    g.mark_sent(g.latest_seq, 20)
    assert g.last_sent_seq == 4 and g.skipped == 2  # 2 and 3 were replaced before they could go
    assert not g.mark_shown(3)  # not the one in flight
    assert not g.ready(30)


def test_a_lost_ack_does_not_stall_the_camera_forever() -> None:
    g = CameraGate()
    g.offer(1)
    g.mark_sent(1, 0)
    g.offer(2)
    assert not g.ready(500_000_000)
    assert g.ready(1_500_000_000)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["offer", "send", "ack"]), max_size=60))
def test_never_more_than_one_in_flight_and_never_a_frame_twice(ops) -> None:
    g, seq, t, in_flight, sent = CameraGate(), 0, 0, 0, []
    for op in ops:
        t += 1
        if op == "offer":
            seq += 1
            g.offer(seq)
        elif op == "send" and g.ready(t):
            assert in_flight == 0
            g.mark_sent(g.latest_seq, t)
            sent.append(g.latest_seq)
            in_flight = 1
        elif op == "ack" and g.in_flight_seq >= 0:
            assert g.mark_shown(g.in_flight_seq)
            in_flight = 0
    assert sent == sorted(set(sent))


def test_frame_message_round_trip_and_stats() -> None:
    header, jpeg = split_frame_message(frame_message("chest", 7, 123, 640, 480, b"\xff\xd8jpeg"))
    assert header == {"camera": "chest", "seq": 7, "capture_ns": "123", "width": 640, "height": 480}
    assert jpeg == b"\xff\xd8jpeg"
    s = LatencyStats()
    for i in range(11):
        s.add(i * 100_000_000, i * 100_000_000 + (i + 1) * 1_000_000)
    out = s.summary()
    assert out["frames"] == 11 and out["median_ms"] == 6.0 and out["shown_hz"] == 9.9  # shown every 101 ms
