"""Node plumbing: decode/send through the contract, end-of-stream rules."""

from __future__ import annotations

import pyarrow as pa
from dora.testing import MockNode

from teledora.runtime import node_io as dora_io
from teledora.operators.contract.messages import decode, encode

CONFIG = """dataflow_id: x
node_id: base
run_config:
  inputs:
    base_cmd: teleop/base_cmd
    tick: dora/timer/millis/10
    other: {source: a/b, queue_policy: backpressure}
  outputs: []
"""


def lift(v: float) -> pa.Array:
    return encode("LiftCommand", dict(stamp_ns=1, velocity_m_s=v))


def test_node_id_comes_from_dora_node_config(monkeypatch) -> None:
    monkeypatch.setenv("DORA_NODE_CONFIG", CONFIG)
    assert dora_io.node_id("fallback") == "base"
    monkeypatch.delenv("DORA_NODE_CONFIG")
    assert dora_io.node_id("fallback") == "fallback"


def test_stream_ends_when_every_data_input_closed_even_with_timers(monkeypatch) -> None:
    monkeypatch.setenv("DORA_NODE_CONFIG", CONFIG)
    node = MockNode([
        {"type": "INPUT", "id": "tick", "value": pa.array([1]), "metadata": {}},
        {"type": "INPUT_CLOSED", "id": "base_cmd"},
        {"type": "INPUT_CLOSED", "id": "other"},
        {"type": "INPUT", "id": "tick", "value": pa.array([2]), "metadata": {}},
        {"type": "STOP", "id": "never-reached-by-a-real-timer-node"},
    ])
    batch = dora_io.next_batch(node)
    assert [e["type"] for e in batch][:3] == ["INPUT", "INPUT_CLOSED", "INPUT_CLOSED"]
    assert dora_io.next_batch(node) is None


def test_stream_goes_on_while_one_data_input_is_open(monkeypatch) -> None:
    monkeypatch.setenv("DORA_NODE_CONFIG", CONFIG)
    node = MockNode([{"type": "INPUT_CLOSED", "id": "base_cmd"}])
    assert dora_io.next_batch(node) is not None
    state = dora_io._streams[id(node)][1]
    assert not state.finished


def test_a_closed_channel_on_drain_ends_the_stream() -> None:
    class ClosingNode(MockNode):
        def drain(self):
            raise RuntimeError("Could not drain events. Channel is closed")

    node = ClosingNode([("x", lift(0.0))])
    assert len(dora_io.next_batch(node)) == 1
    assert dora_io.next_batch(node) is None


def test_newest_per_input_keeps_order_and_the_newest_control_input() -> None:
    events = [
        {"type": "INPUT", "id": "cmd", "value": 1},
        {"type": "INPUT", "id": "log", "value": "a"},
        {"type": "INPUT", "id": "cmd", "value": 2},
        {"type": "INPUT", "id": "log", "value": "b"},
    ]
    kept = dora_io.newest_per_input(events, {"cmd"})
    assert [(e["id"], e["value"]) for e in kept] == [("log", "a"), ("cmd", 2), ("log", "b")]


def test_node_io_rejects_bad_inputs_and_never_sends_a_bad_message() -> None:
    node = MockNode([])
    io = dora_io.NodeIO(node, "lift", clock=lambda: 5_000_000_000)
    assert io.decode({"id": "lift_cmd", "value": pa.array([1.0])}, "LiftCommand") is None
    assert io.decode({"id": "lift_cmd", "value": lift(0.05)}, "LiftCommand")["velocity_m_s"] == 0.05
    assert not io.send("cmd", "LiftCommand", dict(stamp_ns=1, velocity_m_s=float("nan")))
    assert "cmd" not in node.outputs
    io.publish_diagnostics()
    d = decode("Diagnostics", node.outputs["diagnostics"][0])
    assert (d["node"], d["received"], d["rejected"], d["sent"]) == ("lift", 2, 1, 0)
    assert any(log["level"] == "warn" and "wrong Arrow type" in log["message"] for log in node.logs)


def test_ends_with_names_the_command_input_of_a_feedback_loop(monkeypatch) -> None:
    monkeypatch.setenv("DORA_NODE_CONFIG", CONFIG)
    monkeypatch.setenv("TELEDORA_ENDS_WITH", "base_cmd")
    node = MockNode([{"type": "INPUT_CLOSED", "id": "base_cmd"}, {"type": "INPUT", "id": "other", "value": 1, "metadata": {}}])
    assert dora_io.next_batch(node) is not None
    assert dora_io.next_batch(node) is None  # 'other' is still open, but the command input ended
