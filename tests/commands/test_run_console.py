"""The console of `teledora run` / `demo` (teledora/commands/_run_console.py):
everything in the log, the filtered lines and the status on the console; and
the closing lines of a pick-and-place run, read from a recording."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from teledora.commands import demo, view
from teledora.commands._run_console import RunConsole, RunWatch
from teledora.operators.contract.messages import encode
from teledora.operators.datasets.scenario_outcome import object_travel
from teledora.recording import RunWriter

SPAWNED = "06:14:30 DEBUG  \x1b[1marms\x1b[0m: spawner spawned node with pid 28065\n"
ALL_READY = "06:14:49 INFO   [dora]: daemon all nodes are ready, starting dataflow\n"
DISCARD = "06:14:50 WARN   teleop: dora_node_api::event_stream::scheduler Discarding event for input `tick` due to queue size limit\n"
T0 = 1_800_000_000_000_000_000


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_log_gets_every_line_without_colour_and_the_console_only_the_kept_ones(tmp_path):
    out = io.StringIO()
    console = RunConsole(out, tmp_path / "run" / "dora.log", tty=False)
    for line in (SPAWNED, ALL_READY, *[DISCARD] * 50):
        console.write(line)
    console.say("a line of teledora's own")
    closing = console.close()
    log = (tmp_path / "run" / "dora.log").read_text()
    assert log.count("Discarding event") == 50 and "spawner spawned node with pid 28065" in log
    assert "\x1b" not in log and "teledora: a line of teledora's own" in log
    assert out.getvalue().splitlines() == ["arms started (pid 28065)", "all 1 nodes connected: the dataflow runs",
                                           "teledora: a line of teledora's own"]
    assert closing[0].startswith("latest-only queues dropped 50 stale inputs")
    assert closing[-1].endswith(str(tmp_path / "run" / "dora.log"))


def test_verbose_shows_every_line_and_strips_colour_unless_a_terminal(tmp_path):
    plain, term = io.StringIO(), Terminal()
    for out in (plain, term):
        console = RunConsole(out, tmp_path / f"{id(out)}.log", verbose=True)
        for line in (SPAWNED, DISCARD, DISCARD):
            console.write(line)
        console.status()  # no status line in verbose mode
        console.close()
    assert plain.getvalue().count("\n") == 3 and "\x1b" not in plain.getvalue()
    assert "\x1b[1marms\x1b[0m" in term.getvalue() and term.getvalue().count("\n") == 3


def test_the_status_line_rewrites_itself_on_a_terminal_and_is_a_line_elsewhere(tmp_path):
    term, plain = Terminal(), io.StringIO()
    for out in (term, plain):
        console = RunConsole(out, tmp_path / f"{id(out)}.log", clock=lambda: 100.0)
        console.write(SPAWNED)
        console.status()
        console.status()
        console.write(ALL_READY)
        console.close()
    # on a terminal: drawn with \r, wiped before the next line, never left as a line of its own
    status = "\r\x1b[Kstarting: 0 of 1 nodes connected, 0 s"
    assert term.getvalue() == ("arms started (pid 28065)\n" + status + status
                               + "\r\x1b[Kall 1 nodes connected: the dataflow runs\n")
    assert plain.getvalue().splitlines()[1:3] == ["starting: 0 of 1 nodes connected, 0 s"] * 2
    assert "\r" not in plain.getvalue()


def _index(path: Path, rows: list[int]) -> None:
    from teledora.operators.recording.batch_checksums import SCHEMA_ROWS, index_record
    data = index_record(0, 0, 1, SCHEMA_ROWS, 0) + b"".join(index_record(i + 1, 0, 1, n, 0) for i, n in enumerate(rows))
    with open(path, "ab") as f:
        f.write(data)


def test_run_watch_reads_on_from_where_it_ended(tmp_path):
    watch = RunWatch(tmp_path)
    assert watch.counts() == {}
    _index(tmp_path / "ik__joint_commands.arrow.crc", [10, 20])
    assert watch.counts() == {"ik__joint_commands": 30}
    from teledora.operators.recording.batch_checksums import index_record
    record = index_record(3, 0, 1, 5, 0)
    with open(tmp_path / "ik__joint_commands.arrow.crc", "ab") as f:
        f.write(record[:10])  # a record half written
    assert watch.counts() == {"ik__joint_commands": 30}
    with open(tmp_path / "ik__joint_commands.arrow.crc", "ab") as f:
        f.write(record[10:])
    assert watch.counts() == {"ik__joint_commands": 35}


def test_a_replay_s_status_line_counts_only_what_it_expects_and_says_how_far(tmp_path):
    out = io.StringIO()
    console = RunConsole(out, tmp_path / "dora.log", tmp_path, tty=False, clock=lambda: 7.0,
                         expect={"sim__objects": 40, "ik__joint_commands": 60})
    console.write(SPAWNED)
    console.write(ALL_READY)
    _index(tmp_path / "sim__objects.arrow.crc", [25])
    _index(tmp_path / "ik__joint_commands.arrow.crc", [80])  # more than expected: counted as the 60 it should be
    _index(tmp_path / "recorder__status.arrow.crc", [500])  # not part of the replay's promise
    console.status()
    console.close()
    assert out.getvalue().splitlines()[-1].startswith("0 s | 85 of 100 messages replayed (85 %)")


def test_a_real_recording_is_counted_like_its_manifest(tmp_path):
    run = _pick_place_run(tmp_path / "run")
    counts = RunWatch(run).counts()
    assert counts == {"sim__objects": 60, "episodes__marks": 4}


def _pick_place_run(path: Path, back: bool = True) -> Path:
    """A cube that goes 0.2 m east and (``back``) returns; two kept episodes."""
    w = RunWriter(path, {"dataflow_path": "sim.yml"}, start_ns=T0)
    seq = 0
    marks = [(5, "start"), (25, "keep"), (30, "start"), (55, "keep")]
    for i in range(60):
        t = T0 + i * 100_000_000
        x = 0.2 * min(i, 20) / 20 - (0.2 * max(0, i - 35) / 20 if back else 0.0)
        value = encode("ObjectPoses", {"stamp_ns": t, "frame_id": "world", "names": ["cube_blue", "cube_red"],
                                       "x": [1.0, max(x, 0.0)], "y": [0.0, 0.5], "z": [0.42, 0.42],
                                       "qx": [0.0, 0.0], "qy": [0.0, 0.0], "qz": [0.0, 0.0], "qw": [1.0, 1.0]})
        w.append("sim__objects", value, {"seq": seq}, recv_ns=t + 1000)
        seq += 1
        for at, event in marks:
            if at == i:
                w.append("episodes__marks", encode("EpisodeMark", {"stamp_ns": t, "event": event, "task": "move it"}),
                         {"seq": seq}, recv_ns=t + 2000)
                seq += 1
    w.close(T0 + 6_000_000_000)
    return path


def test_pick_place_says_how_far_the_cube_went_the_episodes_kept_and_the_export(tmp_path):
    run = _pick_place_run(tmp_path / "run")
    lines = demo.pick_place_outcome(run)
    assert lines[0] == ("pick-place: cube_red moved up to 0.20 m from where it started (lifted up to 0.00 m) and "
                        "ended 0.00 m from there; 2 episode(s) kept, 0 discarded")
    assert lines[1] == f"next: the dataset: `teledora log export {run} --format lerobot -o datasets/pick_place`"
    stay = demo.pick_place_outcome(_pick_place_run(tmp_path / "stay", back=False))
    assert "ended 0.20 m from there" in stay[0]


def test_object_travel_ignores_other_objects_and_poses_that_are_not_finite():
    msgs = [{"names": ["a", "b"], "x": [0.0, 5.0], "y": [0.0, 0.0], "z": [0.0, 0.0]},
            {"names": ["b", "a"], "x": [9.0, 0.3], "y": [0.0, 0.4], "z": [0.0, 0.1]},
            {"names": ["a"], "x": [np.nan], "y": [0.0], "z": [0.0]},
            {"names": ["a"], "x": [0.0], "y": [0.1], "z": [0.0]}]
    travel = object_travel(msgs, "a")
    assert travel is not None and travel.poses == 3
    assert abs(travel.farthest_m - float(np.sqrt(0.09 + 0.16 + 0.01))) < 1e-12
    assert abs(travel.end_m - 0.1) < 1e-12 and abs(travel.lifted_m - 0.1) < 1e-12
    assert object_travel(msgs, "c") is None


def test_the_rerun_command_is_this_environment_s(monkeypatch, tmp_path):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    monkeypatch.setattr(view.sys, "executable", str(fake_bin / "python"))
    assert view.rerun_command() == f"{fake_bin / 'python'} -m rerun"
    (fake_bin / "rerun").write_text("")
    assert view.rerun_command() == str(fake_bin / "rerun")
