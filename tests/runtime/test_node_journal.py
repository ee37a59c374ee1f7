"""Journaled nodes with MockNode: a run re-fed in another grouping, with another
clock, gives the same output bytes when the node follows its journal."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora.models import load_profile
from teledora.nodes.lidar import scan_merger
from teledora.nodes.teleop import teleop
from teledora.operators.recording.input_journal import JournalError
from teledora.recording.journal_files import FOLLOW_ENV, load_journal
from teledora.operators.contract.messages import encode
from teledora.operators.recording.recorded_message import value_digest
from teledora.recording import RunWriter

MS = 1_000_000
ARM = list(load_profile().arm_joint_names)


class OneByOne(MockNode):
    """One event per batch, as on a quiet machine."""

    def drain(self):
        return []


class Clumps(MockNode):
    """Up to three queued events per batch, as on a busy machine."""

    def drain(self):
        return [self._events.popleft() for _ in range(min(2, len(self._events)))]


def jittery_clock(seed: int, start: int = 1_800_000_000_000_000_000):
    rng = random.Random(seed)
    now = itertools.count()

    def clock() -> int:
        return start + next(now) * 3 * MS + rng.randrange(2 * MS)

    return clock


def event(input_id: str, value: pa.Array, seq: int) -> dict:
    return {"type": "INPUT", "id": input_id, "value": value, "metadata": {"seq": seq}}


def tick() -> dict:
    return {"type": "INPUT", "id": "tick", "value": pa.array([], type=pa.null()), "metadata": {}}


def hand(t_ns: int, x: float, stick: float) -> dict:
    return dict(connected=True, epoch=1, pose_valid=True, position=[x, 0.2, 1.0], orientation=[0.0, 0.0, 0.0, 1.0],
                trigger=0.0, squeeze=1.0, stick=[stick, 0.0], primary=False, secondary=False, stick_click=False,
                menu=False, pose_stamp_ns=t_ns, input_stamp_ns=t_ns)


def teleop_events(n: int) -> list[dict]:
    t0 = 1_800_000_000_000_000_000
    out = [event("joint_states", encode("JointState", dict(stamp_ns=t0, names=ARM, position=np.zeros(14), velocity=[], effort=[])), 0),
           event("lift", encode("LiftState", dict(stamp_ns=t0, height_m=0.3, velocity_m_s=0.0, homed=True)), 0)]
    for i in range(n):
        t = t0 + i * 11 * MS
        msg = dict(stamp_ns=t, frame_id="operator", seq=i, source="test", focused=True, ui_estop=False,
                   ui_release_stop=False, ui_pause=False, ui_episode_start=False,
                   ui_episode_keep=False, ui_episode_discard=False, left=hand(t, 0.3 + 0.002 * i, 0.5), right=hand(t, 0.31, -0.4))
        out.append(event("controllers", encode("XrControllers", msg), i))
        if i % 3 == 0:
            out.append(tick())
    return out


def record_run(tmp_path, node_id: str, outputs: dict[str, list]) -> str:
    """A run directory holding the node's outputs as the recorder would."""
    run = tmp_path / "run"
    writer = RunWriter(run, {"recorded_inputs": {f"{node_id}__{o}": f"{node_id}/{o}" for o in outputs}}, start_ns=0)
    for output, values in outputs.items():
        for i, value in enumerate(values):
            writer.append(f"{node_id}__{output}", value, {"seq": i}, i)
    writer.close(1)
    return str(run)


def digests(values) -> list[str]:
    return [value_digest(v) for v in values]


def steady_clock(start: int, step_ms: int):
    it = itertools.count()
    return lambda: start + next(it) * step_ms * MS


def assert_follows(tmp_path, monkeypatch, module, node_id: str, output: str, events: list[dict], step_ms: int,
                   replay_node=MockNode) -> None:
    """Runs the node live in clumps, then follows its journal with the events
    regrouped and another clock: the output must come out byte-equal."""
    live = Clumps(events)
    module.main([], node=live, clock=steady_clock(1_800_000_000_000_000_000, step_ms))
    assert len(live.outputs[output]) >= 5
    run = record_run(tmp_path, node_id, {"journal": live.outputs["journal"]})
    monkeypatch.setenv(FOLLOW_ENV, run)
    replay = replay_node(events)
    module.main([], node=replay, clock=steady_clock(123, step_ms))
    assert digests(replay.outputs[output]) == digests(live.outputs[output])


def test_teleop_follows_its_journal_to_the_same_bytes(tmp_path, monkeypatch) -> None:
    events = teleop_events(60)
    live = Clumps(events)
    teleop.main([], node=live, clock=jittery_clock(1))
    assert len(live.outputs["arm_targets"]) > 10 and len(live.outputs["joint_commands"]) > 10 and live.outputs["journal"]
    run = record_run(tmp_path, "teleop", {"journal": live.outputs["journal"]})

    monkeypatch.setenv(FOLLOW_ENV, run)
    # everything at once, a different clock, real ticks that must not count
    replay = MockNode(events[:5] + [tick(), tick()] + events[5:])
    teleop.main([], node=replay, clock=jittery_clock(2, start=5))
    # the scheme's outputs and the IK's joint commands solved in the same process
    for output in ("arm_targets", "base_cmd", "lift_cmd", "state", "joint_commands"):
        assert digests(replay.outputs[output]) == digests(live.outputs[output]), output
    # without the journal the same inputs give other bytes (stamps, grouping)
    monkeypatch.delenv(FOLLOW_ENV)
    plain = MockNode(events)
    teleop.main([], node=plain, clock=jittery_clock(2, start=5))
    assert digests(plain.outputs["arm_targets"]) != digests(live.outputs["arm_targets"])


def test_journal_output_counts_match_what_the_node_sent(tmp_path) -> None:
    live = OneByOne(teleop_events(20))
    teleop.main([], node=live, clock=jittery_clock(3))
    run = record_run(tmp_path, "teleop", {"journal": live.outputs["journal"]})
    steps, counts = load_journal(run, "teleop")
    assert counts["arm_targets"] == len(live.outputs["arm_targets"])
    # one step per batch plus the start; OneByOne makes a batch of each event (and the STOP)
    assert len(steps) == 1 + len(teleop_events(20)) + 1
    assert sum(len(s.events) for s in steps) == len(teleop_events(20))


def test_a_missing_input_stops_the_follower_with_a_reason(tmp_path, monkeypatch, capsys) -> None:
    events = teleop_events(30)
    live = OneByOne(events)
    teleop.main([], node=live, clock=jittery_clock(4))
    run = record_run(tmp_path, "teleop", {"journal": live.outputs["journal"]})
    monkeypatch.setenv(FOLLOW_ENV, run)
    lost = [e for e in events if not (e["id"] == "controllers" and e["metadata"]["seq"] == 12)]
    replay = MockNode(lost)
    teleop.main([], node=replay, clock=jittery_clock(5))
    out = capsys.readouterr().out
    assert "journal teleop done:" in out and "controllers seq 12 never arrived" in out
    n = len(replay.outputs["arm_targets"])
    assert 0 < n < len(live.outputs["arm_targets"])
    assert digests(replay.outputs["arm_targets"]) == digests(live.outputs["arm_targets"])[:n]


def test_following_a_run_without_a_journal_is_a_clear_error(tmp_path, monkeypatch) -> None:
    run = record_run(tmp_path, "teleop", {"state": []})
    monkeypatch.setenv(FOLLOW_ENV, run)
    with pytest.raises(JournalError, match="no journal of node 'teleop'"):
        teleop.main([], node=MockNode([]), clock=jittery_clock(6))


def scan(stamp_ns: int, offset: float) -> pa.Array:
    n = 360
    return encode("LaserScan", dict(
        stamp_ns=stamp_ns, frame_id="lidar", angle_min=0.0, angle_max=2 * np.pi * (n - 1) / n,
        angle_increment=2 * np.pi / n, time_increment=1e-4, scan_time=0.1, range_min=0.15, range_max=12.0,
        ranges=1.5 + offset + 0.1 * np.sin(np.arange(n) * 0.05), intensities=[]))


def odom(stamp_ns: int, x: float) -> pa.Array:
    return encode("Odometry", dict(stamp_ns=stamp_ns, frame_id="odom", child_frame_id="base_link", x=x, y=0.0, yaw=0.1 * x,
                                   vx=0.2, vy=0.0, wz=0.02))


def test_scan_merger_follows_its_journal_to_the_same_bytes(tmp_path, monkeypatch) -> None:
    t0 = 1_800_000_000_000_000_000
    events, seqs = [], {"front": 0, "back": 0, "odom": 0, "joint_states": 0, "lift": 0}
    for i in range(40):
        t = t0 + i * 25 * MS
        events.append(event("odom", odom(t, 0.005 * i), seqs["odom"])); seqs["odom"] += 1
        if i % 5 == 0:  # the self-filter's arm and lift poses
            q = np.full(14, 0.05 * i)
            events.append(event("joint_states", encode("JointState", dict(stamp_ns=t, names=ARM, position=q, velocity=[], effort=[])),
                                seqs["joint_states"])); seqs["joint_states"] += 1
            events.append(event("lift", encode("LiftState", dict(stamp_ns=t, height_m=0.01 * i, velocity_m_s=0.0, homed=True)),
                                seqs["lift"])); seqs["lift"] += 1
        if i % 4 == 0:
            events.append(event("front", scan(t - 2 * MS, 0.0), seqs["front"])); seqs["front"] += 1
        if i % 4 == 1:
            events.append(event("back", scan(t - 5 * MS, 0.2), seqs["back"])); seqs["back"] += 1
        if i % 2:
            events.append(tick())
    assert_follows(tmp_path, monkeypatch, scan_merger, "scan_merger", "scan", events, 7, replay_node=OneByOne)


def test_an_unnumbered_data_input_is_reported_once(monkeypatch) -> None:
    config = "node_id: teleop\nrun_config:\n  inputs:\n    controllers: xr/controllers\n    tick: dora/timer/millis/10\n"
    monkeypatch.setenv("DORA_NODE_CONFIG", config)
    events = teleop_events(4)
    for e in events:
        if e["id"] == "controllers":
            e["metadata"] = {}  # a sender that does not number its messages
    node = OneByOne(events)
    teleop.main([], node=node, clock=jittery_clock(7))
    warnings = [entry["message"] for entry in node.logs if "carries no seq" in entry["message"]]
    assert warnings == ["input 'controllers' carries no seq metadata: an exact replay of teleop cannot reproduce what it sent"]
