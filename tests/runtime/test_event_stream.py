"""The node config dora hands a node: data inputs read despite its YAML tags."""

from __future__ import annotations

import pyarrow as pa
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
