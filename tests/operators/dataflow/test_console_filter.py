"""What the console of `teledora run` keeps of `dora run`'s output, with lines
in dora 1.1.0's own shapes (copied from a demo run's output)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.dataflow.console_filter import (ConsoleFilter, RateMeter, RunProgress, format_status,
                                                        index_rows, parse_line, strip_ansi)
from teledora.operators.recording.batch_checksums import SCHEMA_ROWS, index_record

SPAWNED = "06:14:30 DEBUG  arms: spawner spawned node with pid 28065"
READY = "06:14:36 INFO   arms: daemon node is ready"
ALL_READY = "06:14:49 INFO   [dora]: daemon all nodes are ready, starting dataflow"
DISCARD = "06:14:50 WARN   teleop: dora_node_api::event_stream::scheduler Discarding event for input `tick` due to queue size limit"
CHANNEL_FULL = ('06:15:44 stdout arms: {"timestamp":"2026-12-06T06:15:44.461763Z","level":"WARN","fields":{"message":'
                '"event channel full; dropping zenoh input. Raise this input\'s queue_size","input":"recorder_status",'
                '"drops":3},"target":"dora_node_api"}')
DORA_DIAG = "06:14:50 WARN   sim: dora_node_api::node output `objects`: 4488 B -> daemon path (dora-rs/dora#2742 diagnostic)"
ZENOH = "06:14:50 WARN   ekf: zenoh::api::admin Unable to find transport for link event: 2a5e61a6fd1cd6cd508bf970f9435af1"
GAP = "06:15:04 INFO   recorder: gap on sim__objects: stall, 0.260 s, 0 missing (by its counter)"
TRACING = ("\x1b[2m2026-12-06T06:16:09.389430Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[1mrun_inner\x1b[0m: "
           "\x1b[2mdora_daemon\x1b[0m\x1b[2m:\x1b[0m exiting daemon because all required dataflows are finished")
FAILED = "06:15:23 ERROR  recorder: daemon exited because of signal SIGKILL"
STOPPED_BADLY = "06:15:23 DEBUG  ik: daemon handling node stop with exit status ExitCode(1) (restart: false)"
NODE_WARN = "06:15:30 WARN   lidar_front: gap on scan: counter, 0.5 s, 3 missing"


def test_ansi_codes_are_stripped_and_tracing_lines_are_dora_s():
    assert "\x1b" not in strip_ansi(TRACING)
    line = parse_line(TRACING)
    assert line.level == "INFO" and line.node == "[dora]" and line.text.startswith("run_inner: dora_daemon:")
    assert parse_line(DISCARD).node == "teleop" and parse_line(DISCARD).from_dora
    assert parse_line("arms: DEBUG    building node") == parse_line("arms: DEBUG    building node")
    assert parse_line("arms: DEBUG    building node").node == "arms"
    assert not parse_line(NODE_WARN).from_dora


def test_a_healthy_start_shows_one_line_per_node_and_one_when_it_runs():
    f = ConsoleFilter()
    shown = []
    for node, pid in (("arms", 1), ("base", 2), ("ik", 3)):
        shown += f.feed(SPAWNED.replace("arms", node).replace("28065", str(pid)))
        shown += f.feed(READY.replace("arms", node))
    shown += f.feed(ALL_READY)
    for line in (DISCARD, DORA_DIAG, ZENOH, GAP, TRACING, "  inferred teledora/msgs/v1/JointState on recorder/x"):
        shown += f.feed(line)
    assert shown == ["arms started (pid 1)", "base started (pid 2)", "ik started (pid 3)",
                     "all 3 nodes connected: the dataflow runs"]
    assert f.running and f.ready == {"arms", "base", "ik"}


def test_queue_drops_are_summed_per_node_and_input_and_said_once_at_the_end():
    f = ConsoleFilter()
    shown = [s for _ in range(412) for s in f.feed(DISCARD.replace("teleop", "cameras"))]
    shown += [s for _ in range(10) for s in f.feed(DISCARD)]
    shown += f.feed(CHANNEL_FULL)
    assert shown == []
    assert f.drops == {("cameras", "tick"): 412, ("teleop", "tick"): 10, ("arms", "recorder_status"): 3}
    closing = f.closing(70.4, "runs/r/dora.log")
    assert len(closing) == 2
    assert closing[0].startswith("latest-only queues dropped 425 stale inputs in 70 s")
    assert "cameras/tick 412" in closing[0] and "teleop/tick 10" in closing[0]
    assert closing[1].endswith("runs/r/dora.log")


def test_failures_and_errors_are_shown():
    f = ConsoleFilter()
    assert f.feed(FAILED) == ["recorder FAILED: exited because of signal SIGKILL"]
    assert f.feed(STOPPED_BADLY) == ["ik FAILED: exit status ExitCode(1)"]
    assert f.feed("06:15:23 DEBUG  ik: daemon handling node stop with exit status Success (restart: false)") == []
    assert f.feed("06:15:24 ERROR  arms: servo bus lost") == ["arms: ERROR servo bus lost"]
    assert f.failed == {"recorder": "exited because of signal SIGKILL", "ik": "exit status ExitCode(1)"}


def test_a_node_warning_shows_once_per_kind_and_repeats_are_counted():
    f = ConsoleFilter()
    first = f.feed(NODE_WARN)
    again = f.feed(NODE_WARN.replace("0.5 s, 3", "0.7 s, 9"))  # same kind, other numbers
    other = f.feed("06:15:31 WARN   lidar_front: serial port reopened")
    err = f.feed("06:15:31 stderr lidar_front: Traceback (most recent call last):")
    assert first == ["lidar_front: WARN gap on scan: counter, 0.5 s, 3 missing"]
    assert again == [] and other == ["lidar_front: WARN serial port reopened"]
    assert err == ["lidar_front: Traceback (most recent call last):"]
    assert f.repeats == {"lidar_front": 1}
    assert any("1 repeated warnings not shown again (lidar_front 1)" in line for line in f.closing(5.0))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([SPAWNED, READY, ALL_READY, DISCARD, CHANNEL_FULL.replace('"drops":3', '"drops":1'),
                                 DORA_DIAG, ZENOH, GAP, TRACING, NODE_WARN, FAILED, "06:15:31 stderr arms: x = 1",
                                 "plain text", ""]), max_size=300),
       st.integers(min_value=1, max_value=30))
def test_every_line_is_shown_or_counted_and_no_node_floods(lines, per_node):
    """Over any history: each line is shown once or counted once, and a node
    never shows more than ``shown_per_node`` warnings."""
    f = ConsoleFilter(shown_per_node=per_node)
    shown = [s for line in lines for s in f.feed(line)]
    counted = f.hidden + f.dora_warnings + sum(f.drops.values()) + sum(f.repeats.values())
    assert len(shown) + counted == len([line for line in lines if line])
    for node in ("lidar_front", "arms"):
        assert len([s for s in shown if s.startswith(f"{node}: ")]) <= per_node


def test_status_line_before_and_while_running():
    assert format_status(RunProgress(12.4, nodes_started=17, nodes_ready=9)) == "starting: 9 of 17 nodes connected, 12 s"
    line = format_status(RunProgress(42.0, 17, 17, True, 123456, (("teleop", 89.6), ("ik", 90.2), ("arms", 100.0))))
    assert line == "42 s | 123,456 messages recorded | teleop 90 Hz ik 90 Hz arms 100 Hz"
    assert len(line) < 80
    replay = format_status(RunProgress(9.0, 3, 3, True, 1500, (), expected=6000))
    assert replay == "9 s | 1,500 of 6,000 messages replayed (25 %)"


def test_rates_come_from_the_counts_over_the_window():
    meter = RateMeter(window_s=5.0)
    assert meter.add(0.0, {"a": 0}) == {}
    assert meter.add(1.0, {"a": 90}) == {"a": 90.0}
    for t in range(2, 12):
        rates = meter.add(float(t), {"a": 90 * t, "b": 10 * t})
    assert rates["a"] == 90.0
    assert 0 < rates["b"] <= 10.0  # a topic new in the window counts from zero


@given(st.lists(st.integers(min_value=0, max_value=10_000), max_size=40), st.integers(min_value=0, max_value=27))
def test_index_rows_sums_whole_records_and_waits_for_a_partial_one(rows, cut):
    data = index_record(0, 0, 100, SCHEMA_ROWS, 0) + b"".join(index_record(i + 1, 0, 10, n, 0) for i, n in enumerate(rows))
    assert index_rows(data) == (sum(rows), len(data))
    if rows and cut:
        partial = data[:-cut]
        assert index_rows(partial) == (sum(rows[:-1]), len(data) - 28)


def test_a_command_s_outcome_lines_are_kept_and_nothing_else_of_a_node_s_stdout():
    f = ConsoleFilter(keep=re.compile(r"^(?:replay|journal) \S+ done:"))
    assert f.feed("06:14:50 stdout replay_ik: replay ik done: 812 messages\n") == ["replay_ik: replay ik done: 812 messages"]
    assert f.feed("06:14:50 stdout ik: journal ik done: 90 batches\n") == ["ik: journal ik done: 90 batches"]
    assert f.feed("06:14:50 stdout ik: tick 4 of 90 done: fine\n") == []
    assert ConsoleFilter().feed("06:14:50 stdout ik: journal ik done: 90 batches\n") == []
