"""The feed loop hands the page what it displays: the episode state, with how long
the open episode has run; teleop's state, with the newest of the page's own frames
teleop has applied; a malformed display input is counted, never fatal."""

from __future__ import annotations

import json

import pyarrow as pa
from dora.testing import MockNode

from teledora.devices.xr.feed_device import FeedDevice, ReceivedFrame
from teledora.nodes.xr.xr_webxr import run as run_feed
from teledora.operators.xr.feed_step import episode_message
from teledora.operators.contract.messages import decode, encode
from teledora.operators.xr.headset_clock import HOST_CLOCK
from teledora.operators.xr.feed_assembler import FeedAssembler
from teledora.runtime.node_io import NodeIO

S = 1_000_000_000
MS = 1_000_000


class Page(FeedDevice):
    """A feed with no frames that keeps what it was asked to show."""

    def __init__(self) -> None:
        super().__init__()
        self.shown: list[dict] = []

    def connect(self) -> None:
        pass

    def read(self, timeout_s: float = 0.0):
        return []

    def write(self, message):
        self.shown.append(message)

    def diagnostics_details(self):
        return {}

    def close(self) -> None:
        pass


def state(**kw):
    d = dict(stamp_ns=10 * S, open=True, task="fold the towel", number=4, opened_ns=7 * S, discard_armed=True,
             kept=2, discarded=1)
    d.update(kw)
    return d


def test_episode_message_counts_the_open_time_at_forwarding():
    msg = episode_message(state(), 12 * S)
    assert msg == {"type": "episode", "open": True, "task": "fold the towel", "number": 4, "open_for_ns": 5 * S,
                   "discard_armed": True, "kept": 2, "discarded": 1}
    assert episode_message(state(open=False, opened_ns=0), 12 * S)["open_for_ns"] == 0
    assert episode_message(state(opened_ns=13 * S), 12 * S)["open_for_ns"] == 0  # never negative


def test_the_loop_forwards_episode_states_and_counts_bad_ones():
    node = MockNode([
        {"type": "INPUT", "id": "episode", "value": encode("EpisodeState", state()), "metadata": {}},
        {"type": "INPUT", "id": "episode", "value": pa.array([1, 2]), "metadata": {}},
        {"type": "INPUT", "id": "episode", "value": encode("EpisodeState", state(open=False, opened_ns=0, number=5)),
         "metadata": {}},
    ])
    page = Page()
    io = NodeIO(node, "xr", clock=lambda: 20 * S, ends_with=())
    run_feed(io, page, FeedAssembler("test"))
    episodes = [m for m in page.shown if m["type"] == "episode"]
    assert [(m["open"], m["number"], m["open_for_ns"]) for m in episodes] == [(True, 4, 13 * S), (False, 5, 0)]
    assert io.diag.rejected == 1 and "episode" in io.diag.last_error



class PageWithFrames(Page):
    """A page that sends ``frames`` ((client, page seq) each) on the first read."""

    def __init__(self, frames) -> None:
        super().__init__()
        self.pending = list(frames)

    def read(self, timeout_s: float = 0.0):
        out = []
        for client, seq in self.pending:
            data = json.dumps({"version": 1, "session": f"p{client}", "seq": seq, "sent_ns": 20 * S - MS, "frame": "webxr",
                               "ui": {"estop": True}, "hands": {"left": {"connected": False}, "right": {"connected": False}}})
            out.append(ReceivedFrame(data.encode(), "page", client, 20 * S, HOST_CLOCK))
        self.pending = []
        return out


def teleop_state(latched: bool, xr_seq=None):
    value = encode("TeleopState", dict(stamp_ns=20 * S, estop_latched=latched, release_armed=False, arms_paused=False,
                                       left_clutched=False, right_clutched=False, left_slow=False, right_slow=False,
                                       left_pinch="full", right_pinch="full", reset_count=0, events=[]))
    return {"type": "INPUT", "id": "state", "value": value, "metadata": {} if xr_seq is None else {"xr_seq": xr_seq}}


def run_page(frames, states):
    page = PageWithFrames(frames)
    node = MockNode(states)
    run_feed(NodeIO(node, "xr", clock=lambda: 20 * S, ends_with=()), page, FeedAssembler("webxr"))
    reports = [decode("XrControllers", v)["seq"] for v in node.outputs["controllers"]]
    return reports, [m for m in page.shown if m["type"] == "state"]


def test_a_forwarded_state_says_which_of_the_page_s_frames_teleop_has_applied():
    # the page's frames 7, 9 and 12 become reports 1, 2, 3; teleop's state names the newest report
    # it applied (metadata xr_seq), and the page is told the frame that report came from. A state
    # without xr_seq, or naming a report before the page's first, tells the page nothing.
    reports, shown = run_page([(1, 7), (1, 9), (1, 12)], [
        teleop_state(False, 1), teleop_state(True, 2), teleop_state(True, 8), teleop_state(True), teleop_state(True, 0)])
    assert reports == [1, 2, 3]
    assert [(m["estop_latched"], m.get("page_seq")) for m in shown] == [
        (False, 7), (True, 9), (True, 12), (True, None), (True, None)]


def test_a_new_client_s_page_is_not_told_about_the_old_one_s_frames():
    # client 1's frames 7 and 9 are reports 1 and 2; then client 2 takes over and sends its
    # frame 1 (report 3). A state naming report 2 is about the old page, not this one.
    reports, shown = run_page([(1, 7), (1, 9), (2, 1)], [teleop_state(True, 2), teleop_state(True, 3)])
    assert reports == [1, 2, 3]
    assert [m.get("page_seq") for m in shown] == [None, 1]
