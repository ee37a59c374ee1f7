"""replayer node: sends a node's recorded outputs, in order, on the recorded clock."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora.nodes.recording import replayer
from teledora.operators.contract.messages import decode, encode
from teledora.recording import RunWriter, value_digest

T0 = 1_800_000_000_000_000_000
MS = 1_000_000


def lift(i: int) -> pa.StructArray:
    return encode("LiftState", {"stamp_ns": T0 + i, "height_m": 0.01 * i, "velocity_m_s": 0.0, "homed": True})


def at(ns: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(0, dt.timezone.utc) + dt.timedelta(microseconds=ns // 1000)


@pytest.fixture()
def run(tmp_path):
    """lift/state every 100 ms, renderer/chest at 50 ms and 250 ms, teleop/lift_cmd once."""
    w = RunWriter(tmp_path / "run", {"recorded_inputs": {"lift__state": "lift/state", "cams__front": "renderer/chest"}}, start_ns=T0)
    img = pa.array(np.arange(48, dtype=np.uint8))
    for i in range(4):
        w.append("lift__state", lift(i), {"timestamp": at(T0 + i * 100 * MS), "stamp_ns": 1}, recv_ns=T0 + i * 100 * MS + 1)
        if i in (0, 2):
            w.append("cams__front", img, {"timestamp": at(T0 + (i * 100 + 50) * MS), "width": 4}, recv_ns=T0)
    w.append("teleop__lift_cmd", encode("LiftCommand", {"stamp_ns": 1, "velocity_m_s": 0.1}), {}, recv_ns=T0 + 10 * MS)
    w.close(T0 + 400 * MS)
    return tmp_path / "run"


class MetaNode(MockNode):
    """MockNode that keeps the metadata of each replayed output (its own
    diagnostics apart), with no STOP unless a test queues one."""

    def __init__(self, stop_after: int | None = None) -> None:
        super().__init__([])
        self._events.clear()  # the STOP MockNode appends
        self.stop_after = stop_after
        self.sent: list[tuple[str, pa.Array, dict]] = []
        self.on_send = lambda output_id, data, metadata: None

    def send_output(self, output_id, data, metadata=None):
        super().send_output(output_id, data, metadata)
        if output_id == "diagnostics":
            return
        self.sent.append((output_id, data, dict(metadata or {})))
        self.on_send(output_id, data, metadata)
        if len(self.sent) == self.stop_after:
            self._events.append({"type": "STOP", "id": "stop"})  # what `dora stop` delivers

    def diagnostics(self) -> list[dict]:
        return [decode("Diagnostics", v) for v in self.outputs.get("diagnostics", [])]


class FakeTime:
    def __init__(self) -> None:
        self.now = T0 + 3_600 * 10**9  # replay an hour after the recording
        self.sleeps: list[float] = []

    def clock(self) -> int:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += int(seconds * 1e9)


def test_sends_only_its_outputs_in_recorded_order_with_metadata(run, capsys):
    node, t = MetaNode(), FakeTime()
    argv = ["--run", str(run), "--node", "lift", "--speed", "0", "--stamps", "recorded"]
    assert replayer.main(argv, node=node, clock=t.clock, sleep=t.sleep) == 4
    assert [o for o, _, _ in node.sent] == ["state"] * 4
    assert [value_digest(v) for _, v, _ in node.sent] == [value_digest(lift(i)) for i in range(4)]
    assert all(meta == {"stamp_ns": 1} for _, _, meta in node.sent)  # dora re-stamps "timestamp"
    assert t.sleeps == []  # speed 0: no waiting
    assert "replay lift done: 4 messages" in capsys.readouterr().out


@pytest.mark.parametrize("speed", ["1", "0"])
def test_shifted_stamps_keep_each_message_as_fresh_as_when_recorded(run, speed):
    node, t = MetaNode(), FakeTime()
    sent = []
    node.on_send = lambda o, d, m=None: sent.append((t.now, d, m))
    replayer.main(["--run", str(run), "--node", "lift", "--speed", speed], node=node, clock=t.clock, sleep=t.sleep)
    for i, (send_ns, value, meta) in enumerate(sent):
        recorded_send_ns = T0 + i * 100 * MS
        # recorded age of the stamp (stamp - send time) is kept at the replayed send time
        assert value.field("stamp_ns")[0].as_py() - send_ns == (T0 + i) - recorded_send_ns
        assert meta["stamp_ns"] - send_ns == 1 - recorded_send_ns
        assert value.field("height_m").equals(lift(i).field("height_m"))


def test_topic_wiring_from_manifest_maps_odd_topic_names(run):
    node, t = MetaNode(), FakeTime()
    replayer.main(["--run", str(run), "--node", "renderer", "--speed", "0"], node=node, clock=t.clock, sleep=t.sleep)
    assert [o for o, _, _ in node.sent] == ["chest", "chest"]
    assert node.sent[0][1].to_pylist() == list(range(48)) and node.sent[0][2] == {"width": 4}


@pytest.mark.parametrize("speed", [1.0, 2.0])
def test_original_timing_scaled_by_speed(run, speed):
    node, t = MetaNode(), FakeTime()
    start = t.now
    sent_at = []
    node.on_send = lambda o, d, m=None: sent_at.append((t.now - start) / MS)
    replayer.main(["--run", str(run), "--node", "lift", "--speed", str(speed)], node=node, clock=t.clock, sleep=t.sleep)
    # the run's first message (lift at T0) is replay time 0; the others keep their offsets
    assert sent_at == pytest.approx([0.0, 100 / speed, 200 / speed, 300 / speed])


def test_loops_repeat_the_run(run):
    node, t = MetaNode(), FakeTime()
    start = t.now
    assert replayer.main(["--run", str(run), "--node", "lift", "--loops", "2"], node=node, clock=t.clock, sleep=t.sleep) == 8
    # the second pass starts one run duration (300 ms + 1 ns) after the first
    assert (t.now - start) / MS == pytest.approx(600.0, abs=0.01)


def test_unknown_node_is_an_error(run):
    with pytest.raises(replayer.ReplaySourceError, match="sim"):
        replayer.main(["--run", str(run), "--node", "sim"], node=MetaNode())


def test_negative_speed_is_refused(run):
    with pytest.raises(SystemExit):
        replayer.main(["--run", str(run), "--node", "lift", "--speed", "-1"], node=MetaNode())


def test_topics_that_arrived_out_of_send_order_go_out_in_send_order_at_their_spacing(tmp_path):
    """The recorder saw arms/joint_states late (a busy machine): it arrived
    after servo_targets messages sent up to 400 ms later. The replay sends by
    send time, at the recorded spacing, with no burst."""
    w = RunWriter(tmp_path / "run", {}, start_ns=T0)
    sends = {"arms__servo_targets": [0, 100, 200, 300, 400], "arms__joint_states": [50, 150, 250]}
    # arrival order: every servo target first, then the joint states in one late burst
    for topic in ("arms__servo_targets", "arms__joint_states"):
        for k, ms in enumerate(sends[topic]):
            w.append(topic, lift(k), {"timestamp": at(T0 + ms * MS)}, recv_ns=T0 + 500 * MS)
    w.close(T0 + 600 * MS)
    node, t = MetaNode(), FakeTime()
    start = t.now
    sent = []
    node.on_send = lambda o, d, m=None: sent.append((o, round((t.now - start) / MS, 3)))
    replayer.main(["--run", str(tmp_path / "run"), "--node", "arms", "--speed", "1"], node=node, clock=t.clock, sleep=t.sleep)
    expected = sorted([(ms, o) for o, times in (("servo_targets", sends["arms__servo_targets"]), ("joint_states", sends["arms__joint_states"])) for ms in times])
    assert sent == [(o, float(ms)) for ms, o in expected]


def test_stop_during_a_long_replay_ends_it_promptly_and_says_how_many_went_out(tmp_path, capsys):
    """Three states 100 ms apart, then one an hour later: a STOP after the
    third ends the replay within one poll period, not an hour later."""
    w = RunWriter(tmp_path / "run", {}, start_ns=T0)
    for i, ms in enumerate([0, 100, 200, 3_600_000]):
        w.append("lift__state", lift(i), {"timestamp": at(T0 + ms * MS)}, recv_ns=T0 + ms * MS)
    w.close(T0 + 3_600_001 * MS)
    node, t = MetaNode(stop_after=3), FakeTime()
    start = t.now
    assert replayer.main(["--run", str(tmp_path / "run"), "--node", "lift", "--speed", "1"], node=node, clock=t.clock, sleep=t.sleep) == 3
    assert t.now - (start + 200 * MS) <= replayer.POLL_PERIOD_NS
    out = capsys.readouterr().out
    assert "replay lift stopped after 3 messages (3/4 of pass 1)" in out and "done:" not in out
    last = node.diagnostics()[-1]
    assert last["sent"] == 3 and last["level"] == "ok" and "stopped after 3" in last["message"]


def test_a_looping_replay_stops_on_stop_too(run):
    node, t = MetaNode(stop_after=6), FakeTime()
    assert replayer.main(["--run", str(run), "--node", "lift", "--loop"], node=node, clock=t.clock, sleep=t.sleep) == 6


def test_publishes_its_own_diagnostics_and_never_the_recorded_ones(tmp_path):
    w = RunWriter(tmp_path / "run", {}, start_ns=T0)
    recorded_diag = {"stamp_ns": T0, "node": "lift", "level": "error", "message": "recorded", "received": 7, "sent": 7,
                     "rejected": 0, "clamped": 0, "dropped": 0, "last_error": "", "details_json": "{}"}
    for i in range(3):
        w.append("lift__state", lift(i), {"timestamp": at(T0 + i * 100 * MS)}, recv_ns=T0 + i * 100 * MS)
    w.append("lift__diagnostics", encode("Diagnostics", recorded_diag), {"timestamp": at(T0 + 150 * MS)}, recv_ns=T0 + 150 * MS)
    w.close(T0 + 300 * MS)
    node, t = MetaNode(), FakeTime()
    assert replayer.main(["--run", str(tmp_path / "run"), "--node", "lift", "--speed", "1"], node=node, clock=t.clock, sleep=t.sleep) == 3
    assert [o for o, _, _ in node.sent] == ["state"] * 3
    diags = node.diagnostics()
    assert diags and all(d["message"] != "recorded" for d in diags)
    assert diags[0]["sent"] == 0 and diags[0]["level"] == "ok"
    last = diags[-1]
    assert last["sent"] == 3 and last["level"] == "ok" and "done: 3 messages" in last["message"]
    assert json.loads(last["details_json"])["replayed"] == 3 and json.loads(last["details_json"])["total"] == 3


def test_a_node_that_recorded_only_its_diagnostics_is_replayed_as_silent_with_diagnostics(tmp_path, capsys):
    w = RunWriter(tmp_path / "run", {}, start_ns=T0)
    diag = {"stamp_ns": T0, "node": "renderer", "level": "ok", "message": "", "received": 0, "sent": 0,
            "rejected": 0, "clamped": 0, "dropped": 0, "last_error": "", "details_json": "{}"}
    w.append("renderer__diagnostics", encode("Diagnostics", diag), {"timestamp": at(T0)}, recv_ns=T0)
    w.close(T0 + 100 * MS)
    node, t = MetaNode(), FakeTime()
    assert replayer.main(["--run", str(tmp_path / "run"), "--node", "renderer", "--loop"], node=node, clock=t.clock, sleep=t.sleep) == 0
    assert node.sent == [] and node.diagnostics()[-1]["node"] == "renderer"
    assert "replay renderer done: 0 messages" in capsys.readouterr().out
