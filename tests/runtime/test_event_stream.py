"""The node config dora hands a node: data inputs read despite its YAML tags."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora.runtime.event_stream import EventStream, _data_inputs

# the shape dora-rs 1.1.0 puts in DORA_NODE_CONFIG (abridged)
DORA_CONFIG = """dataflow_id: 01a2324f-8f4c-749f-b6ae-04af2d63e322
node_id: base
run_config:
  inputs:
    base_cmd: teleop/base_cmd
    tick: dora/timer/millis/20
    recorder_status:
      source: recorder/status
      queue_size: 10
  outputs: []
daemon_communication: !Tcp
  socket_addr: 127.0.0.1:46025
dynamic: false
"""


def test_data_inputs_of_a_tagged_dora_config_skip_timers():
    assert _data_inputs(DORA_CONFIG) == frozenset({"base_cmd", "recorder_status"})


def test_unreadable_config_gives_no_inputs():
    assert _data_inputs("run_config: [unclosed") == frozenset()


def test_poll_takes_only_what_is_queued_and_sees_the_end():
    node = MockNode([("a", pa.array([1])), {"type": "INPUT_CLOSED", "id": "a"}])
    stream = EventStream(node, ends_with={"a"})
    batch = stream.poll()
    assert [ev["type"] for ev in batch] == ["INPUT", "INPUT_CLOSED", "STOP"]
    assert stream.finished  # its ending input closed
    assert stream.poll() is None


def test_poll_on_an_empty_queue_returns_an_empty_batch():
    node = MockNode([])
    stream = EventStream(node, ends_with=set())
    assert [ev["type"] for ev in stream.poll()] == ["STOP"]
    assert stream.poll() == []  # nothing queued: no wait, no end


def test_poll_ends_when_dora_closes_the_channel():
    class Closed(MockNode):
        def drain(self):
            raise RuntimeError("event stream closed")

    stream = EventStream(Closed([]), ends_with=set())
    assert stream.poll() is None
    assert stream.finished


def test_a_bounded_batch_leaves_the_rest_queued_in_order():
    node = MockNode([("a", pa.array([i])) for i in range(7)])
    stream = EventStream(node, ends_with=set())
    sizes, values = [], []
    while (batch := stream.next_batch(max_events=3)) is not None:
        sizes.append(len(batch))
        values += [ev["value"][0].as_py() for ev in batch if ev["type"] == "INPUT"]
    assert values == list(range(7))  # nothing lost, nothing reordered
    assert sizes[:2] == [3, 3] and max(sizes) <= 3


def test_a_bounded_batch_of_one_takes_only_the_first_event():
    node = MockNode([("a", pa.array([1])), ("b", pa.array([2]))])
    stream = EventStream(node, ends_with=set())
    assert [ev["id"] for ev in stream.next_batch(max_events=1)] == ["a"]
    assert [ev["id"] for ev in stream.next_batch(max_events=1)] == ["b"]


def test_a_bounded_batch_refuses_a_limit_below_one():
    stream = EventStream(MockNode([("a", pa.array([1]))]), ends_with=set())
    with pytest.raises(ValueError):
        stream.next_batch(max_events=0)


def test_a_closed_channel_while_taking_a_slice_ends_the_stream():
    class Closing(MockNode):
        def try_recv(self):
            raise RuntimeError("event stream closed")

    stream = EventStream(Closing([("a", pa.array([1])), ("a", pa.array([2]))]), ends_with=set())
    assert [ev["id"] for ev in stream.next_batch(max_events=5)] == ["a"]
    assert stream.finished and stream.next_batch(max_events=5) is None


def test_a_slice_that_ends_the_stream_takes_the_data_queued_behind_the_close():
    # dora can deliver an input's INPUT_CLOSED ahead of that producer's last
    # data; a node reading in slices must not end with those still queued
    events = [("a", pa.array([1])), {"type": "INPUT_CLOSED", "id": "a"}, ("a", pa.array([2])), ("a", pa.array([3]))]
    stream = EventStream(MockNode(events), ends_with={"a"})
    batch = stream.next_batch(max_events=2)
    assert stream.finished
    assert [ev["value"][0].as_py() for ev in batch if ev["type"] == "INPUT"] == [1, 2, 3]
