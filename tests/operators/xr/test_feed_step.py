"""The XR feed nodes' decisions without dora: reports applied only once sent,
a disconnect before a new client's first report, refusals counted by reason
and logged once a period, display inputs turned into what the page shows."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from teledora.operators.contract.diagnostics import Diagnostics
from teledora.operators.contract.messages import encode
from teledora.operators.xr.feed_assembler import FeedAssembler
from teledora.operators.xr.feed_step import FeedStep, PageImage
from teledora.operators.xr.headset_clock import HOST_CLOCK, ClockEstimate

MS = 1_000_000
T0 = 10_000 * MS


@dataclass(frozen=True)
class Rx:
    data: bytes
    peer: str
    client: int
    recv_ns: int
    clock: ClockEstimate | None = HOST_CLOCK
    disconnect: bool = False


def rx(client: int, seq: int, connected: bool = True, recv_ns: int = T0, **ui) -> Rx:
    left = {"connected": True, "pose_valid": True, "position": [0.1, 1.2, -0.3], "orientation": [0, 0, 0, 1]}
    d = {"version": 1, "session": f"s{client}", "seq": seq, "sent_ns": recv_ns - MS, "frame": "webxr", "ui": ui,
         "hands": {"left": left if connected else {"connected": False}, "right": {"connected": False}}}
    return Rx(json.dumps(d).encode(), f"peer{client}", client, recv_ns)


def step() -> FeedStep:
    return FeedStep(FeedAssembler("test"), Diagnostics("xr"))


def send_all(feed: FeedStep, frame: Rx) -> list[dict]:
    reports = feed.receive(frame)
    for r in reports:
        feed.sent(r)
    return [r.message for r in reports]


def test_a_frame_is_applied_only_once_its_report_is_sent():
    feed = step()
    before = feed.assembler.snapshot()
    (report,) = feed.receive(rx(1, 1))
    assert feed.assembler.snapshot() == before
    assert feed.sent(report)  # the first report changes levels: it goes on buttons too
    assert feed.assembler.snapshot() != before
    assert feed.diag.details["peer"] == "peer1" and feed.diag.details["last_seq"] == report.message["seq"]


def test_a_new_client_gets_a_disconnect_report_first_while_a_hand_was_connected():
    feed = step()
    send_all(feed, rx(1, 1))
    reports = send_all(feed, rx(2, 1))
    assert [m["left"]["connected"] for m in reports] == [False, True]
    assert [m["seq"] for m in reports] == [2, 3]
    assert any("controlling client changed to peer2" in text for _, text in feed.take_logs())
    # a client that leaves is reported disconnected however its last frame read
    assert [m["left"]["connected"] for m in send_all(feed, Rx(b"", "peer2", 2, T0, disconnect=True))] == [False]


def test_refusals_are_counted_by_reason_and_logged_once_a_period():
    feed = step()
    for _ in range(3):
        assert feed.receive(Rx(b"not json", "peer1", 1, T0)) == []
    logs = feed.take_logs()
    assert len(logs) == 1 and logs[0][0] == "warn"
    reason = next(iter(feed.tally.by_reason))
    assert feed.tally.by_reason[reason] == 3 and feed.diag.rejected_by_reason[reason] == 3
    feed.tally.absorb_device({"bad_mac": 2})
    feed.tally.absorb_device({"bad_mac": 5})
    assert feed.diag.rejected == 3 + 5 and feed.diag.rejected_by_reason["bad_mac"] == 5
    feed.tally.settle()
    assert feed.diag.level == "warn" and f"{reason} 3" in feed.diag.message and "bad_mac 5" in feed.diag.message
    feed.tally.settle()
    assert feed.diag.level == "ok"


def test_an_old_frame_is_dropped_not_refused():
    feed = step()
    send_all(feed, rx(1, 5))
    assert feed.receive(rx(1, 4)) == []
    assert feed.diag.dropped == 1 and feed.diag.rejected == 0


def teleop_state(latched: bool) -> pa.Array:
    return encode("TeleopState", dict(stamp_ns=T0, estop_latched=latched, release_armed=False, arms_paused=False,
                                      left_clutched=False, right_clutched=False, left_slow=False, right_slow=False,
                                      left_pinch="full", right_pinch="full", reset_count=0, events=[]))


def test_the_page_is_told_which_of_its_frames_teleop_has_applied():
    feed = step()
    send_all(feed, rx(1, 7))
    shown = feed.display("state", teleop_state(True), {"xr_seq": 1}, T0)
    assert shown["type"] == "state" and shown["estop_latched"] and shown["page_seq"] == 7
    assert "page_seq" not in feed.display("state", teleop_state(True), {}, T0)


def test_bad_display_inputs_are_counted_and_show_nothing():
    feed = step()
    assert feed.display("state", pa.array([1, 2]), {}, T0) is None
    assert feed.display("episode", pa.array([1, 2]), {}, T0) is None
    meta = {"encoding": "jpeg", "width": 4, "height": 4}
    assert feed.display("chest", pa.array([1, 2, 3], type=pa.uint8()), meta, T0) is None
    assert feed.diag.rejected == 3
    assert [level for level, _ in feed.take_logs()] == ["warn", "warn", "warn"]
    assert feed.display("not_an_input", pa.array([1]), {}, T0) is None


def test_raw_pixels_are_offered_as_an_rgb_copy_at_their_capture_time():
    pixels = pa.array(bytes(range(48)), type=pa.uint8())
    meta = {"encoding": "rgb8", "width": 4, "height": 4, "capture_ns": 5}
    shown = feed_display_image(pixels, meta)
    assert isinstance(shown, PageImage) and shown.camera == "chest" and shown.capture_ns == 5
    assert shown.image.shape == (4, 4, 3)


def feed_display_image(value, meta):
    return step().display("chest", value, meta, T0)


frames = st.lists(st.tuples(st.integers(1, 3), st.booleans(), st.booleans()), max_size=25)


@given(frames)
def test_reports_are_numbered_without_gaps_and_a_client_change_disconnects_first(history):
    """Over any history of clients, frames with a hand connected or not, and
    garbage: the reports sent are numbered 1, 2, 3, ...; after a report with a
    hand connected, a frame from another client is preceded by a report with
    both hands disconnected."""
    feed = step()
    sent: list[dict] = []
    seqs = {}
    now = T0
    for client, connected, garbage in history:
        now += MS
        seqs[client] = seqs.get(client, 0) + 1
        frame = Rx(b"{garbage", f"peer{client}", client, now) if garbage else rx(client, seqs[client], connected, now)
        was_live = bool(sent) and (sent[-1]["left"]["connected"] or sent[-1]["right"]["connected"])
        changed = feed.client is not None and client != feed.client
        new = send_all(feed, frame)
        if changed and was_live:
            assert new and not new[0]["left"]["connected"] and not new[0]["right"]["connected"]
        sent += new
    assert [m["seq"] for m in sent] == list(range(1, len(sent) + 1))
