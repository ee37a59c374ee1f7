"""recorder node: MockNode runs, diagnostics, and a kill -9 mid-run."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from dora.testing import MockNode
from hypothesis import HealthCheck, given, settings, strategies as st

from teledora.nodes.recording import recorder
from teledora.operators.contract.messages import decode, encode
from teledora.recording import RunReader

REPO = Path(__file__).resolve().parents[3]


def lift(i: int) -> pa.StructArray:
    return encode("LiftState", {"stamp_ns": 1000 + i, "height_m": 0.01 * i, "velocity_m_s": 0.0, "homed": True})


def ev(input_id: str, value: pa.Array, **meta) -> dict:
    return {"type": "INPUT", "id": input_id, "value": value, "metadata": meta}


class StepClock:
    """A clock that advances a fixed step per call."""

    def __init__(self, step_ns: int = 10_000_000) -> None:
        self.t = 1_800_000_000_000_000_000
        self.step = step_ns

    def __call__(self) -> int:
        self.t += self.step
        return self.t


def test_records_every_input_including_after_stop(tmp_path, capsys):
    img = pa.array(np.arange(12, dtype=np.uint8))
    stamp = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    events = [ev("lift__state", lift(i), timestamp=stamp) for i in range(3)]
    events += [ev("renderer__chest", img, width=2, height=2, encoding="rgb8", stamp_ns=5)]
    events += [{"type": "STOP", "id": "ALL_INPUTS_CLOSED"}]  # data may still follow STOP
    events += [ev("lift__state", lift(3))]
    node = MockNode(events)
    run = recorder.main(["--runs-dir", str(tmp_path)], node=node, clock=StepClock())
    out = capsys.readouterr().out
    assert f"recording to {run.resolve()}" in out and f"recording finished: {run.resolve()}" in out
    r = RunReader(run)
    assert r.complete
    assert {t: r.read_topic(t).table.num_rows for t in r.topics} == {"lift__state": 4, "renderer__chest": 1}
    msgs = list(r.iter_messages())
    assert [m.seq for m in msgs] == list(range(5))
    assert msgs[3].value.equals(img) and json.loads(msgs[3].metadata)["width"] == 2
    assert decode("LiftState", msgs[4].value)["height_m"] == pytest.approx(0.03)
    assert msgs[0].dora_ns == int(stamp.timestamp()) * 10**9
    assert r.manifest["packages"]["pyarrow"] == pa.__version__
    diag = decode("Diagnostics", node.outputs["diagnostics"][0])
    assert diag["node"] == "recorder" and diag["received"] >= 1


def test_type_change_is_rejected_and_counted_not_fatal(tmp_path):
    node = MockNode([ev("lift__state", lift(0)), ev("lift__state", pa.array([1.0])), ev("lift__state", lift(1))])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock(2_000_000_000))
    assert RunReader(run).read_topic("lift__state").table.num_rows == 2
    last = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert last["rejected"] == 1 and "lift__state" in last["last_error"]
    assert any(log["level"] == "warn" and "rejected" in log["message"] for log in node.logs)


def test_input_id_that_cannot_be_a_file_name_is_rejected(tmp_path):
    node = MockNode([ev("../escape", lift(0)), ev("lift__state", lift(1))])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    assert RunReader(run).topics == ["lift__state"]
    assert not (tmp_path / "escape.arrow").exists()
    assert decode("Diagnostics", node.outputs["diagnostics"][-1])["rejected"] == 1


def test_existing_recording_is_never_overwritten(tmp_path):
    recorder.main(["--run-dir", str(tmp_path / "r")], node=MockNode([ev("lift__state", lift(0))]), clock=StepClock())
    with pytest.raises(SystemExit, match="already holds a recording"):
        recorder.main(["--run-dir", str(tmp_path / "r")], node=MockNode([]), clock=StepClock())


def test_runs_dir_from_environment_and_stall_is_reported(tmp_path, monkeypatch):
    monkeypatch.setenv("TELEDORA_RUNS_DIR", str(tmp_path / "elsewhere"))
    base = 1_800_000_000_000_000_000
    events = [ev("lift__state", lift(i), timestamp=dt.datetime.fromtimestamp((base + i * 10**7) / 1e9, dt.timezone.utc)) for i in range(20)]
    late = dt.datetime.fromtimestamp((base + 19 * 10**7 + 2 * 10**9) / 1e9, dt.timezone.utc)
    events.append(ev("lift__state", lift(20), timestamp=late))
    node = MockNode(events)
    run = recorder.main([], node=node, clock=StepClock())
    assert run.parent == tmp_path / "elsewhere"
    assert RunReader(run).manifest["gaps"]["stall"] == 1
    assert any("gap on lift__state: stall" in log["message"] for log in node.logs)


CHILD = textwrap.dedent(
    """
    import sys, time
    import pyarrow as pa
    from teledora.nodes.recording import recorder
    now = [1_800_000_000_000_000_000]

    class FeedNode:
        '''Delivers 100 messages, lets the clock pass a flush, delivers 50 more, then blocks.'''
        def __init__(self):
            self.events = [("msg", i) for i in range(100)] + [("tick", None)] + [("msg", i) for i in range(100, 150)]
        def next(self, timeout=None):
            if not self.events:
                print("blocked", flush=True)
                time.sleep(float(sys.argv[2]))
                return {"type": "ERROR", "error": "timeout"}
            kind, i = self.events.pop(0)
            if kind == "tick":
                now[0] += 2_000_000_000
                return {"type": "ERROR", "error": "timeout"}
            return {"type": "INPUT", "id": "src__out", "value": pa.array([i], pa.int64()), "metadata": {}}
        def drain(self):
            return []
        def try_recv(self):
            return None
        def send_output(self, *a, **k):
            pass
        def log(self, *a, **k):
            pass

    recorder.main(["--run-dir", sys.argv[1], "--flush-interval-s", "1.0"], node=FeedNode(), clock=lambda: now[0])
    """
)


def test_kill_9_keeps_everything_up_to_the_last_flush(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(run), "3600"], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        for line in proc.stdout:
            if line.strip() == "blocked":
                break
        else:
            pytest.fail(f"child ended early with {proc.wait()}")
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    r = RunReader(run)
    assert not r.complete
    table = r.read_topic("src__out").table
    # the flush after message 100 is durable; the 50 after it were still buffered
    assert table.num_rows == 100
    assert [v[0] for v in table.column("value").to_pylist()] == list(range(100))
    assert r.manifest["topics"]["src__out"]["count"] == 100


def test_sigterm_closes_the_run_with_everything_received(tmp_path):
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(run), "0.05"], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        for line in proc.stdout:
            if line.strip() == "blocked":
                break
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        proc.wait()
    r = RunReader(run)
    assert r.complete and r.manifest["ended_by"] == "SIGTERM"
    assert r.read_topic("src__out").table.num_rows == 150  # the 50 unflushed ones too


def test_input_id_without_node_output_form_is_rejected_and_counted(tmp_path):
    node = MockNode([ev("camera", lift(0)), ev("lift__state", lift(1)), ev("camera", lift(2))])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    reader = RunReader(run)
    assert reader.topics == ["lift__state"]
    assert reader.manifest["name_errors"] == {"camera": 2}
    last = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert last["rejected"] == 2 and "<node>__<output>" in last["last_error"]


def test_empty_first_message_of_the_wrong_type_does_not_fix_the_topic_type(tmp_path):
    wrong_empty = pa.array([], type=pa.float32())
    right_empty = lift(0).slice(0, 0)
    node = MockNode([
        ev("lift__state", wrong_empty),
        ev("lift__state", right_empty),
        ev("lift__state", lift(1)),
        ev("lift__state", lift(2)),
    ])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    reader = RunReader(run)
    table = reader.read_topic("lift__state")
    assert table.value_type == lift(0).type
    assert [len(m.value) for m in reader.iter_topic("lift__state")] == [0, 1, 1]
    assert reader.manifest["type_errors"] == {"lift__state": 1}
    last = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert last["rejected"] == 1 and "empty float" in last["last_error"]


def test_topic_with_only_empty_messages_takes_the_first_ones_type(tmp_path):
    node = MockNode([ev("x__y", pa.array([], type=pa.int8())), ev("x__y", pa.array([], type=pa.int8()))])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    table = RunReader(run).read_topic("x__y")
    assert table.value_type == pa.int8() and table.table.num_rows == 2


def test_a_long_backlog_is_read_in_slices_and_recorded_whole(tmp_path):
    class CountingNode(MockNode):
        """Counts how many events each loop turn takes from dora."""

        def __init__(self, events):
            super().__init__(events)
            self.turns: list[int] = []
            self._inside_try = False

        def next(self, timeout=None):
            if not self._inside_try:  # MockNode's try_recv may itself call next
                self.turns.append(1)
            return super().next(timeout)

        def try_recv(self):
            self._inside_try = True
            try:
                event = super().try_recv()
            finally:
                self._inside_try = False
            if event is not None:
                self.turns[-1] += 1
            return event

    n = 3 * recorder.MAX_EVENTS_PER_TURN + 7
    node = CountingNode([ev("lift__state", lift(i)) for i in range(n)])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    # full slices, never more: the flush and heartbeat run between them
    assert max(node.turns) == recorder.MAX_EVENTS_PER_TURN
    table = RunReader(run).read_topic("lift__state").table
    assert table.column("seq").to_pylist() == list(range(n))  # every message, in order


def test_raise_priority_lowers_the_nice_value_or_says_why_not(monkeypatch):
    calls = []

    def fake_nice(inc):
        calls.append(inc)
        return 4 + sum(calls)

    monkeypatch.setattr(recorder.os, "nice", fake_nice)
    assert recorder.raise_priority(10) == (4, -6, "")
    assert calls == [0, -10]

    def refusing_nice(inc):
        if inc < 0:
            raise PermissionError(1, "Operation not permitted")
        return 4

    monkeypatch.setattr(recorder.os, "nice", refusing_nice)
    before, after, why = recorder.raise_priority(10)
    assert (before, after) == (4, 4) and "cannot raise" in why and "not permitted" in why
    assert recorder.raise_priority(0) == (4, 4, "")  # not asked: nothing tried


def test_a_node_handed_in_keeps_the_callers_priority(tmp_path):
    before = os.nice(0)
    run = recorder.main(["--run-dir", str(tmp_path / "r"), "--priority", "5"], node=MockNode([ev("lift__state", lift(0))]), clock=StepClock())
    assert os.nice(0) == before
    assert RunReader(run).manifest["recorder_nice"] == {"before": before, "after": before}


def test_the_real_priority_change_in_a_child_process():
    code = "from teledora.nodes.recording import recorder; print(*recorder.raise_priority(3), sep='|')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True).stdout.strip()
    before, after, why = out.split("|", 2)
    if why:  # no privilege to raise it: unchanged, and the reason is given
        assert after == before and "cannot raise" in why
    else:
        assert int(after) == int(before) - 3


@pytest.mark.parametrize("pause", [0.02, 0.0])
def test_after_a_short_batch_it_waits_for_more_and_never_after_a_full_one(tmp_path, monkeypatch, pause):
    class CountingNode(MockNode):
        def __init__(self, events):
            super().__init__(events)
            self.taken = 0

        def next(self, timeout=None):
            event = super().next(timeout)
            self.taken += event is not None
            return event

        def try_recv(self):
            event = super().try_recv()
            self.taken += event is not None
            return event

    n = 2 * recorder.MAX_EVENTS_PER_TURN + 30
    node = CountingNode([ev("lift__state", lift(i)) for i in range(n)])
    pauses = []
    real_sleep = recorder.time.sleep

    def sleep(seconds):  # time.sleep is shared: only the recorder's own calls count
        if sys._getframe(1).f_globals.get("__name__") == recorder.__name__:
            pauses.append((seconds, node.taken))
        real_sleep(0 if sys._getframe(1).f_globals.get("__name__") == recorder.__name__ else seconds)

    monkeypatch.setattr(recorder.time, "sleep", sleep)
    run = recorder.main(["--run-dir", str(tmp_path / "r"), "--batch-pause-s", str(pause)], node=node, clock=StepClock())
    if pause:
        # two full slices go straight on; the short one after them waits
        assert pauses and {s for s, _ in pauses} == {pause}
        assert all(taken >= n for _, taken in pauses)
    else:
        assert pauses == []
    table = RunReader(run).read_topic("lift__state").table
    assert table.column("seq").to_pylist() == list(range(n))


@pytest.mark.parametrize("bad", ["-0.01", "0.5"])
def test_a_pause_that_would_hold_back_the_heartbeat_is_refused(tmp_path, bad):
    with pytest.raises(SystemExit):
        recorder.parse_args(["--run-dir", str(tmp_path / "r"), "--batch-pause-s", bad])


class Opaque:
    def __repr__(self) -> str:
        return "<opaque>"


IMAGE_META = {"width": 2, "height": 2, "encoding": "rgb8", "camera": "chest", "stamp_ns": 5}
BAD_MESSAGES = [
    ("None value", None, {}),
    ("a Python list", [1, 2, 3], {}),
    ("an object", Opaque(), {}),
    ("a numpy array", np.zeros(3), {}),
    ("dictionary-encoded", pa.array(["a", "b", "a"]).dictionary_encode(), {}),
    ("metadata a list", pa.array([1], pa.int64()), ["not", "a", "mapping"]),
    ("metadata a string", pa.array([1], pa.int64()), "timestamp"),
    ("metadata int key", pa.array([1], pa.int64()), {1: "x"}),
    ("metadata nested dict", pa.array([1], pa.int64()), {"a": {"b": 1}}),
    ("metadata object", pa.array([1], pa.int64()), {"a": Opaque()}),
    ("timestamp past int64", pa.array([1], pa.int64()), {"timestamp": dt.datetime(9999, 1, 1, tzinfo=dt.timezone.utc)}),
    ("stamp past int64", pa.array([1], pa.int64()), {"stamp_ns": 2**70}),
    ("image height -1", pa.array(np.zeros(12, np.uint8)), {**IMAGE_META, "height": -1, "width": -4}),
    ("image zero size", pa.array([], pa.uint8()), {**IMAGE_META, "height": 0, "width": 0}),
    ("image size mismatch", pa.array(np.zeros(11, np.uint8)), IMAGE_META),
    ("image unknown encoding", pa.array(np.zeros(12, np.uint8)), {**IMAGE_META, "encoding": "yuv422"}),
    ("image float width", pa.array(np.zeros(12, np.uint8)), {**IMAGE_META, "width": 2.0}),
    ("image not uint8", pa.array(np.zeros(12, np.float32)), IMAGE_META),
    ("image without encoding", pa.array(np.zeros(12, np.uint8)), {"width": 2, "height": 2}),
]


@pytest.mark.parametrize("what,value,meta", BAD_MESSAGES, ids=[b[0] for b in BAD_MESSAGES])
def test_a_message_the_run_cannot_hold_is_refused_counted_and_the_recording_goes_on(tmp_path, what, value, meta):
    events = [ev("lift__state", lift(0)), {"type": "INPUT", "id": "cam__chest", "value": value, "metadata": meta},
              ev("lift__state", lift(1))]
    node = MockNode(events)
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    reader = RunReader(run)
    assert reader.complete and reader.topics == ["lift__state"]  # nothing of it stored
    assert [m.seq for m in reader.iter_messages()] == [0, 1]
    assert reader.manifest["rejected"]["cam__chest"]["count"] == 1
    last = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert last["rejected"] == 1 and "cam__chest" in last["last_error"]
    assert any(log["level"] == "warn" and "rejected input 'cam__chest'" in log["message"] for log in node.logs)
    levels = [decode("Diagnostics", d)["level"] for d in node.outputs["diagnostics"]]
    assert "warn" in levels


def test_a_valid_image_a_chunked_array_and_no_metadata_are_recorded(tmp_path):
    img = pa.array(np.arange(12, dtype=np.uint8))
    chunked = pa.chunked_array([pa.array([1, 2], pa.int64()), pa.array([3], pa.int64())])
    events = [ev("cam__chest", img, **IMAGE_META), {"type": "INPUT", "id": "x__y", "value": chunked, "metadata": None},
              {"type": "INPUT", "id": "x__y", "value": pa.chunked_array([], pa.int64()), "metadata": {}}]
    node = MockNode(events)
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    reader = RunReader(run)
    assert reader.topics == ["cam__chest", "x__y"] and reader.manifest["rejected"] == {}
    assert [m.value.to_pylist() for m in reader.iter_topic("x__y")] == [[1, 2, 3], []]
    assert next(reader.iter_topic("cam__chest")).value.equals(img)


def test_an_input_id_that_is_no_string_is_refused_and_counted(tmp_path):
    node = MockNode([{"type": "INPUT", "id": 7, "value": lift(0), "metadata": {}}, ev("lift__state", lift(1))])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    reader = RunReader(run)
    assert reader.topics == ["lift__state"] and reader.manifest["rejected"]["7"]["count"] == 1


def test_a_uint64_stamp_beyond_int64_is_stored_with_no_stamp(tmp_path):
    big = pa.array([{"stamp_ns": 2**64 - 1, "v": 1.0}], type=pa.struct([("stamp_ns", pa.uint64()), ("v", pa.float64())]))
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=MockNode([ev("x__y", big)]), clock=StepClock())
    (msg,) = RunReader(run).iter_topic("x__y")
    assert msg.value.equals(big) and msg.stamp_ns is None


GOOD_MESSAGES = [
    ("lift__state", lift(2), {}),
    ("cam__chest", pa.array(np.arange(12, dtype=np.uint8)), IMAGE_META),
    ("x__y", pa.array([1.5, float("nan")]), {"seq": 3, "note": "ok", "list": [1, 2]}),
]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 99)), max_size=25))
def test_any_mix_of_good_and_refused_messages_keeps_every_good_one_and_counts_every_other(tmp_path_factory, history):
    events, goods = [], 0
    for good, k in history:
        topic, value, meta = GOOD_MESSAGES[k % len(GOOD_MESSAGES)] if good else ("bad__" + str(k % 3),) + BAD_MESSAGES[k % len(BAD_MESSAGES)][1:]
        events.append({"type": "INPUT", "id": topic, "value": value, "metadata": meta})
        goods += good
    node = MockNode(events)
    run = recorder.main(["--run-dir", str(tmp_path_factory.mktemp("r") / "r")], node=node, clock=StepClock())
    reader = RunReader(run)
    assert reader.complete
    assert [m.seq for m in reader.iter_messages()] == list(range(goods))
    assert sum(e["count"] for e in reader.manifest["rejected"].values()) == len(history) - goods
    assert decode("Diagnostics", node.outputs["diagnostics"][-1])["rejected"] == len(history) - goods


def test_tuning_comes_from_recording_yaml_and_a_flag_overrides_it(tmp_path):
    cfg = tmp_path / "recording.yaml"
    cfg.write_text("recorder: {flush_interval_s: 0.5, batch_pause_s: 0.01, priority_boost_nice: 3}\n")
    args = recorder.parse_args(["--run-dir", str(tmp_path / "r"), "--config", str(cfg)])
    assert (args.flush_interval_s, args.batch_pause_s, args.priority) == (0.5, 0.01, 3)
    args = recorder.parse_args(["--run-dir", str(tmp_path / "r"), "--config", str(cfg), "--priority", "0"])
    assert (args.flush_interval_s, args.batch_pause_s, args.priority) == (0.5, 0.01, 0)


def test_a_recording_yaml_out_of_range_stops_the_recorder_before_it_starts(tmp_path):
    cfg = tmp_path / "recording.yaml"
    cfg.write_text("recorder: {flush_interval_s: 0.5, batch_pause_s: 0.3, priority_boost_nice: 3}\n")
    with pytest.raises(SystemExit):
        recorder.parse_args(["--run-dir", str(tmp_path / "r"), "--config", str(cfg)])
