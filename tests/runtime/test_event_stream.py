"""The node config dora hands a node: data inputs read despite its YAML tags."""

from __future__ import annotations

import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora.runtime.event_stream import BATCH_SPACING_ENV, EventStream, _data_inputs, batch_spacing_from_env

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


class _FakeClock:
    """A monotonic clock that only the stream's sleeps move."""

    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def test_batch_spacing_waits_out_the_rest_of_the_span_between_batches():
    clock = _FakeClock()
    node = MockNode([("a", pa.array([i])) for i in range(3)])
    stream = EventStream(node, ends_with=set(), batch_spacing_s=0.05, monotonic=clock.monotonic, sleep=clock.sleep)
    assert [ev["id"] for ev in stream.next_batch(max_events=1)] == ["a"]
    assert clock.sleeps == []  # the first batch is taken at once
    clock.now += 0.02  # the node worked 20 ms on it
    stream.next_batch(max_events=1)
    assert clock.sleeps == [pytest.approx(0.03)]  # only what is left of the 50 ms
    clock.now += 0.08  # longer than the spacing: no wait
    stream.next_batch(max_events=1)
    assert clock.sleeps == [pytest.approx(0.03)]


def test_batch_spacing_keeps_every_event_in_order():
    clock = _FakeClock()
    node = MockNode([("a", pa.array([i])) for i in range(9)])
    stream = EventStream(node, ends_with=set(), batch_spacing_s=0.05, monotonic=clock.monotonic, sleep=clock.sleep)
    values = []
    while (batch := stream.next_batch(max_events=2)) is not None:
        values += [ev["value"][0].as_py() for ev in batch if ev["type"] == "INPUT"]
    assert values == list(range(9))


def test_a_timeout_bounds_the_spacing_wait_and_shrinks_by_it():
    class Timed(MockNode):
        def __init__(self, events):
            super().__init__(events)
            self.timeouts = []

        def next(self, timeout=None):
            self.timeouts.append(timeout)
            return super().next(timeout)

    clock = _FakeClock()
    node = Timed([("a", pa.array([i])) for i in range(3)])
    stream = EventStream(node, ends_with=set(), batch_spacing_s=0.05, monotonic=clock.monotonic, sleep=clock.sleep)
    stream.next_batch(timeout_s=0.5, max_events=1)
    stream.next_batch(timeout_s=0.01, max_events=1)  # a frame due in 10 ms: the spacing gives way
    assert clock.sleeps == [pytest.approx(0.01)]
    assert node.timeouts[-1] == pytest.approx(0.0)
    clock.now += 0.05
    stream.next_batch(timeout_s=0.2, max_events=1)
    assert node.timeouts[-1] == pytest.approx(0.2)  # nothing waited: the whole timeout is left


def test_batch_spacing_outside_its_bounds_is_refused():
    for bad in (-0.01, 0.2):
        with pytest.raises(ValueError, match="batch_spacing_s"):
            EventStream(MockNode([]), ends_with=set(), batch_spacing_s=bad)


@pytest.mark.parametrize("text, expected", [("", 0.0), ("0", 0.0), (" 0.05 ", 0.05), ("0.1", 0.1)])
def test_batch_spacing_from_env_reads_seconds(monkeypatch, text, expected):
    monkeypatch.setenv(BATCH_SPACING_ENV, text)
    assert batch_spacing_from_env() == expected


@pytest.mark.parametrize("text", ["fast", "0.5", "-1", "nan"])
def test_batch_spacing_from_env_refuses_bad_values_clearly(monkeypatch, text):
    monkeypatch.setenv(BATCH_SPACING_ENV, text)
    with pytest.raises(ValueError, match=BATCH_SPACING_ENV):
        batch_spacing_from_env()
