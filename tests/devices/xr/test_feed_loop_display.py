"""The feed loop hands the page what it displays: the episode state, with how long
the open episode has run; a malformed display input is counted, never fatal."""

from __future__ import annotations

import pyarrow as pa
from dora.testing import MockNode

from teledora.devices.xr.feed_device import FeedDevice
from teledora.devices.xr.feed_loop import episode_message, run_feed
from teledora.operators.contract.messages import encode
from teledora.operators.xr.feed_assembler import FeedAssembler
from teledora.runtime.node_io import NodeIO

S = 1_000_000_000


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
