"""The node runtime: reading batches, end-of-stream rules, decode/send through the contract."""

from __future__ import annotations

import pyarrow as pa
import pytest
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


def io_over(node: MockNode, **kw) -> dora_io.NodeIO:
    return dora_io.NodeIO(node, "base", clock=lambda: 0, **kw)


def test_stream_ends_when_every_data_input_closed_even_with_timers(monkeypatch) -> None:
    monkeypatch.setenv("DORA_NODE_CONFIG", CONFIG)
    io = io_over(MockNode([
        {"type": "INPUT", "id": "tick", "value": pa.array([1]), "metadata": {}},
        {"type": "INPUT_CLOSED", "id": "base_cmd"},
        {"type": "INPUT_CLOSED", "id": "other"},
        {"type": "INPUT", "id": "tick", "value": pa.array([2]), "metadata": {}},
        {"type": "STOP", "id": "never-reached-by-a-real-timer-node"},
    ]))
    batch = io.next_batch()
    assert [e["type"] for e in batch][:3] == ["INPUT", "INPUT_CLOSED", "INPUT_CLOSED"]
    assert io.next_batch() is None


def test_stream_goes_on_while_one_data_input_is_open(monkeypatch) -> None:
    monkeypatch.setenv("DORA_NODE_CONFIG", CONFIG)
    io = io_over(MockNode([{"type": "INPUT_CLOSED", "id": "base_cmd"}]))
    assert io.next_batch() is not None
    assert io.stream.closed == {"base_cmd"}
    assert not io.stream.finished


def test_two_nodes_keep_separate_stream_state(monkeypatch) -> None:
    monkeypatch.setenv("DORA_NODE_CONFIG", CONFIG)
    monkeypatch.setenv("TELEDORA_ENDS_WITH", "base_cmd")
    closing = io_over(MockNode([{"type": "INPUT_CLOSED", "id": "base_cmd"}, ("tick", pa.array([1]))]))
    open_ = io_over(MockNode([("tick", pa.array([1])), ("tick", pa.array([2]))]))
    assert closing.next_batch() is not None
    assert closing.next_batch() is None  # its command input ended
    assert closing.stream.finished and closing.stream.closed == {"base_cmd"}
    assert not open_.stream.finished and open_.stream.closed == set()
    assert [e["id"] for e in open_.next_batch()] == ["tick", "tick", "ALL_INPUTS_CLOSED"]


def test_a_closed_channel_on_drain_ends_the_stream() -> None:
    class ClosingNode(MockNode):
        def drain(self):
            raise RuntimeError("Could not drain events. Channel is closed")

    io = io_over(ClosingNode([("x", lift(0.0))]))
    assert len(io.next_batch()) == 1
    assert io.next_batch() is None


def test_a_timeout_is_an_empty_batch_not_the_end() -> None:
    class Quiet(MockNode):
        def next(self, timeout=None):
            return {"type": "ERROR", "error": "Timeout: no event within 10ms"} if timeout is not None else super().next()

        def drain(self):
            return []

    io = io_over(Quiet([("x", lift(0.0))]))
    assert io.next_batch(timeout_s=0.01) == []
    assert io.next_batch(timeout_s=0) == []
    assert [e["id"] for e in io.next_batch()] == ["x"]


def test_a_source_node_ends_on_stop_not_on_closed_inputs(monkeypatch) -> None:
    monkeypatch.setenv("DORA_NODE_CONFIG", CONFIG)
    io = io_over(MockNode([{"type": "INPUT_CLOSED", "id": "base_cmd"}, {"type": "INPUT_CLOSED", "id": "other"}]),
                 ends_with=())
    assert [e["type"] for e in io.next_batch()] == ["INPUT_CLOSED", "INPUT_CLOSED", "STOP"]
    assert not io.stream.finished


def test_newest_keeps_order_and_the_newest_control_input() -> None:
    events = [
        {"type": "INPUT", "id": "cmd", "value": 1},
        {"type": "INPUT", "id": "log", "value": "a"},
        {"type": "INPUT", "id": "cmd", "value": 2},
        {"type": "INPUT", "id": "log", "value": "b"},
    ]
    kept = io_over(MockNode([])).newest(events, {"cmd"})
    assert [(e["id"], e["value"]) for e in kept] == [("log", "a"), ("cmd", 2), ("log", "b")]


def test_a_journaled_node_reads_without_a_timeout() -> None:
    io = io_over(MockNode([]), journal=True)
    with pytest.raises(ValueError, match="without a timeout"):
        io.next_batch(timeout_s=0.1)


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
    io = io_over(MockNode([{"type": "INPUT_CLOSED", "id": "base_cmd"}, {"type": "INPUT", "id": "other", "value": 1, "metadata": {}}]))
    assert io.next_batch() is not None
    assert io.next_batch() is None  # 'other' is still open, but the command input ended


def test_clamps_are_counted_each_time_and_logged_once_per_period() -> None:
    node = MockNode([])
    now = [5_000_000_000]
    io = dora_io.NodeIO(node, "lift", clock=lambda: now[0])
    for _ in range(5):
        io.clamp("lift_cmd: velocity_m_s 0.2 m/s to 0.08 m/s")
    io.publish_diagnostics()
    now[0] += 1_000_000_000
    io.clamp("lift_cmd: velocity_m_s 0.1 m/s to 0.08 m/s")
    io.publish_diagnostics()
    first, second = (decode("Diagnostics", v) for v in node.outputs["diagnostics"])
    assert (first["clamped"], first["level"]) == (5, "warn") and "5 input(s) clamped" in first["message"]
    assert (second["clamped"], second["level"]) == (6, "warn") and "0.1 m/s" in second["message"]
    assert sum("clamped" in log["message"] for log in node.logs) == 2


def test_a_node_that_cannot_start_says_why_once_and_exits() -> None:
    node = MockNode([])
    io = dora_io.NodeIO(node, "cameras", clock=lambda: 5_000_000_000)
    cause = OSError("no such file: cameras.yaml")
    with pytest.raises(SystemExit, match="cameras could not start: no such file") as raised:
        io.fail_start("cameras", cause)
    assert raised.value.__cause__ is cause
    (value,) = node.outputs["diagnostics"]  # sent at once, not when a period is due
    d = decode("Diagnostics", value)
    assert d["level"] == "error" and d["message"] == "cameras could not start: no such file: cameras.yaml"
    assert d["last_error"] == d["message"]
    assert [log["level"] for log in node.logs] == ["error"] and "could not start" in node.logs[0]["message"]


def test_diagnostics_refresh_runs_only_when_a_snapshot_goes_out() -> None:
    node = MockNode([])
    now = [5_000_000_000]
    io = dora_io.NodeIO(node, "ik", clock=lambda: now[0])
    calls = []

    def refresh() -> None:
        calls.append(now[0])
        io.diag.set_status("warn", f"at {now[0]}")

    for _ in range(5):  # the first is due at once, the next four within its period
        io.publish_diagnostics(refresh=refresh)
        now[0] += 100_000_000
    now[0] += 1_000_000_000
    io.publish_diagnostics(refresh=refresh)
    io.publish_diagnostics(force=True, refresh=refresh)
    assert len(calls) == 3 and len(node.outputs["diagnostics"]) == 3
    assert decode("Diagnostics", node.outputs["diagnostics"][1])["message"] == f"at {calls[1]}"


def test_batch_spacing_comes_from_the_node_env(monkeypatch) -> None:
    monkeypatch.setenv("TELEDORA_BATCH_SPACING_S", "0.05")
    assert io_over(MockNode([])).stream.batch_spacing_s == 0.05
    monkeypatch.delenv("TELEDORA_BATCH_SPACING_S")
    assert io_over(MockNode([])).stream.batch_spacing_s == 0.0


def test_a_bad_batch_spacing_stops_the_node_with_its_name(monkeypatch) -> None:
    from teledora.operators.errors import ConfigError

    monkeypatch.setenv("TELEDORA_BATCH_SPACING_S", "1")
    with pytest.raises(ConfigError, match="base: TELEDORA_BATCH_SPACING_S must be within"):
        io_over(MockNode([]))
