"""`teledora replay`: how the recorded dataflow is rewritten."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from teledora.cli import build_parser
from teledora.commands import replay
from teledora.recording.journal_files import FOLLOW_ENV
from teledora.operators.contract.messages import encode
from teledora.recording import RunReader, RunWriter

DATAFLOW = """
nodes:
  - id: xr
    path: ../nodes/xr/xr_scripted.py
    outputs: [controllers, diagnostics]
    output_types: {controllers: teledora/msgs/v1/XrControllers}
  - id: teleop
    path: ../nodes/teleop/teleop.py
    inputs:
      controllers: xr/controllers
      joint_states: {source: arms/joint_states, queue_size: 1}
      tick: dora/timer/millis/10
    outputs: [arm_targets]
  - id: arms
    path: ../nodes/drive/arms_sim.py
    inputs: {joint_commands: teleop/joint_commands}
    outputs: [joint_states]
  - id: recorder
    path: ../nodes/recording/recorder.py
    inputs:
      xr__controllers: {source: xr/controllers, queue_policy: backpressure}
    outputs: [diagnostics]
"""


def plan(replace, **kw):
    recorded = {"xr": {"controllers"}, "arms": {"joint_states"}, "teleop": {"arm_targets"}}
    return replay.build_replay_dataflow(
        yaml.safe_load(DATAFLOW),
        recorded,
        replace,
        run_dir=Path("/runs/r1"),
        dataflow_dir=Path(__file__).resolve().parents[2] / "dataflows",
        replayer_path=Path("/x/replayer.py"),
        speed=0.0,
        loop=False,
    )


def test_replaced_nodes_become_replayers_with_the_same_id_and_outputs():
    out, warnings = plan(["xr", "arms"])
    nodes = {n["id"]: n for n in out["nodes"]}
    assert list(nodes) == ["xr", "teleop", "arms", "recorder"]
    assert nodes["xr"]["path"] == "/x/replayer.py"
    assert nodes["xr"]["args"] == "--run /runs/r1 --node xr --speed 0 --stamps shifted"
    assert nodes["xr"]["outputs"] == ["controllers", "diagnostics"] and "inputs" not in nodes["xr"]
    assert nodes["xr"]["output_types"] == {"controllers": "teledora/msgs/v1/XrControllers"}
    assert warnings == ["xr/diagnostics was not recorded: it stays silent in the replay"]


def test_inputs_fed_by_replayers_get_backpressure_and_live_paths_become_absolute():
    out, _ = plan(["xr", "arms"])
    teleop = {n["id"]: n for n in out["nodes"]}["teleop"]
    assert teleop["inputs"]["controllers"] == {"source": "xr/controllers", "queue_policy": "backpressure", "queue_size": 1000}
    assert teleop["inputs"]["joint_states"] == {"source": "arms/joint_states", "queue_policy": "backpressure", "queue_size": 1000}
    assert teleop["inputs"]["tick"] == "dora/timer/millis/10"
    assert Path(teleop["path"]).is_absolute() and teleop["path"].endswith("nodes/teleop/teleop.py")


def test_recorder_is_told_what_it_records_a_replay_of():
    out, _ = plan(["xr"])
    rec = {n["id"]: n for n in out["nodes"]}["recorder"]
    assert rec["env"] == {"TELEDORA_REPLAY_OF": "/runs/r1"}


def test_unknown_or_unrecorded_nodes_are_refused():
    with pytest.raises(replay.ReplayPlanError, match="not in the recorded dataflow"):
        plan(["lidar_front"])
    with pytest.raises(replay.ReplayPlanError, match="no recorded output"):
        plan(["recorder"])


def test_default_replaces_the_source_nodes():
    assert replay.source_nodes(yaml.safe_load(DATAFLOW)) == ["xr"]


def test_dry_run_prints_the_plan_from_a_run_manifest(tmp_path, capsys):
    run = tmp_path / "run"
    w = RunWriter(run, {"dataflow_yaml": DATAFLOW, "dataflow_dir": str(tmp_path)}, start_ns=0)
    w.append("xr__controllers", encode("LiftCommand", {"stamp_ns": 1, "velocity_m_s": 0.0}), {}, recv_ns=1)
    w.close(2)
    args = build_parser().parse_args(["replay", str(run), "--speed", "0", "--dry-run"])
    assert args.func(args) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert {n["id"]: n for n in printed["nodes"]}["xr"]["args"].startswith(f"--run {run.resolve()} --node xr")


def test_run_without_dataflow_is_reported(tmp_path, capsys):
    run = tmp_path / "run"
    RunWriter(run, start_ns=0).close(1)
    args = build_parser().parse_args(["replay", str(run)])
    assert args.func(args) == 2
    assert "no dataflow in its manifest" in capsys.readouterr().err


# dora installs its own Ctrl-C handler; so does the fake, since a shell that
# starts the suite in the background hands its children SIGINT ignored
FAKE_DORA = ("import signal, time; signal.signal(signal.SIGINT, signal.default_int_handler); "
             "print('replay xr done: 3 messages', flush=True); time.sleep(60)")


def test_dataflow_is_stopped_once_the_replay_is_recorded(tmp_path, capsys):
    from teledora.recording import write_manifest

    write_manifest(tmp_path, {"topics": {"xr__controllers": {"count": 3}}})
    rc = replay.run_until_replayed(
        [sys.executable, "-c", FAKE_DORA], dict(os.environ), {"xr"}, 0.0, tmp_path, {"xr__controllers": 3}
    )
    assert rc == 0  # stopped by us with SIGINT: a normal end
    assert "replay xr done" in capsys.readouterr().out
    assert replay.recorded_counts(tmp_path) == {"xr__controllers": 3}


def test_expected_counts_cover_replayed_topics_the_recorder_records(tmp_path):
    run = tmp_path / "run"
    w = RunWriter(run, {"dataflow_yaml": DATAFLOW}, start_ns=0)
    for i in range(3):
        w.append("xr__controllers", encode("LiftCommand", {"stamp_ns": i, "velocity_m_s": 0.0}), {}, recv_ns=i)
    w.append("arms__joint_states", encode("LiftCommand", {"stamp_ns": 9, "velocity_m_s": 0.0}), {}, recv_ns=9)
    w.close(10)
    planned, _ = plan(["xr", "arms"])
    # the recorder in DATAFLOW records xr/controllers only
    assert replay.expected_counts(planned, RunReader(run), ["xr", "arms"]) == {"xr__controllers": 3}


def test_expected_counts_leave_out_the_diagnostics_a_replayer_publishes_itself(tmp_path):
    run = tmp_path / "run"
    w = RunWriter(run, {"dataflow_yaml": DATAFLOW}, start_ns=0)
    w.append("xr__controllers", encode("LiftCommand", {"stamp_ns": 1, "velocity_m_s": 0.0}), {}, recv_ns=1)
    w.append("xr__diagnostics", encode("LiftCommand", {"stamp_ns": 2, "velocity_m_s": 0.0}), {}, recv_ns=2)
    w.close(10)
    planned, _ = plan(["xr"])
    recorder = next(n for n in planned["nodes"] if n["id"] == "recorder")
    recorder["inputs"]["xr__diagnostics"] = {"source": "xr/diagnostics"}
    assert replay.expected_counts(planned, RunReader(run), ["xr"]) == {"xr__controllers": 1}


def test_followers_lose_nothing_and_take_their_ticks_from_the_journal():
    recorded = {"xr": {"controllers"}, "arms": {"joint_states"}, "teleop": {"arm_targets", "journal"}}
    out, _ = replay.build_replay_dataflow(
        yaml.safe_load(DATAFLOW), recorded, ["xr", "arms"], run_dir=Path("/runs/r1"),
        dataflow_dir=Path("/d"), replayer_path=Path("/x/replayer.py"), speed=0.0, loop=False,
        stamps="recorded", follow=["teleop"], topic_counts={"arms/joint_states": 5000},
    )
    teleop = {n["id"]: n for n in out["nodes"]}["teleop"]
    assert teleop["env"] == {FOLLOW_ENV: "/runs/r1"}
    assert "tick" not in teleop["inputs"]
    # as much queue as the recording holds of the topic: nothing can be dropped
    assert teleop["inputs"]["joint_states"] == {"source": "arms/joint_states", "queue_policy": "backpressure", "queue_size": 5001}
    assert teleop["inputs"]["controllers"]["queue_size"] == 1000


def exact_run(tmp_path, with_journal: bool) -> Path:
    run = tmp_path / "run"
    wiring = {"xr__controllers": "xr/controllers", "arms__joint_states": "arms/joint_states"}
    if with_journal:
        wiring["teleop__journal"] = "teleop/journal"
    w = RunWriter(run, {"dataflow_yaml": DATAFLOW, "dataflow_dir": str(tmp_path), "recorded_inputs": wiring}, start_ns=0)
    w.append("xr__controllers", encode("LiftCommand", {"stamp_ns": 1, "velocity_m_s": 0.0}), {"seq": 0}, recv_ns=1)
    w.append("arms__joint_states", encode("LiftCommand", {"stamp_ns": 1, "velocity_m_s": 0.0}), {"seq": 0}, recv_ns=1)
    if with_journal:
        journal = dict(stamp_ns=2, node="teleop", first_step=0, step_events=[0, 2], event_inputs=["controllers", "joint_states"],
                       event_seqs=[0, 0], step_reads=[0, 1], clock_ns=[5], outputs=["arm_targets"], output_counts=[1])
        w.append("teleop__journal", encode("InputJournal", journal), {"seq": 0}, recv_ns=2)
    w.close(3)
    return run


def test_exact_live_plan_replays_everything_else_and_follows_journals(tmp_path, capsys):
    run = exact_run(tmp_path, with_journal=True)
    args = build_parser().parse_args(["replay", str(run), "--live", "teleop", "--exact", "--speed", "0", "--dry-run"])
    assert args.func(args) == 0
    nodes = {n["id"]: n for n in yaml.safe_load(capsys.readouterr().out)["nodes"]}
    assert nodes["xr"]["path"].endswith("replayer.py") and nodes["arms"]["path"].endswith("replayer.py")
    assert "--stamps recorded" in nodes["xr"]["args"]
    assert nodes["teleop"]["env"][FOLLOW_ENV] == str(run.resolve())
    assert nodes["recorder"]["path"].endswith("recorder.py")


def test_exact_alone_runs_the_journaled_nodes_live(tmp_path, capsys):
    run = exact_run(tmp_path, with_journal=True)
    args = build_parser().parse_args(["replay", str(run), "--exact", "--dry-run"])
    assert args.func(args) == 0
    nodes = {n["id"]: n for n in yaml.safe_load(capsys.readouterr().out)["nodes"]}
    assert nodes["teleop"]["path"].endswith("teleop.py") and FOLLOW_ENV in nodes["teleop"]["env"]
    assert nodes["xr"]["path"].endswith("replayer.py") and nodes["arms"]["path"].endswith("replayer.py")
    args = build_parser().parse_args(["replay", str(exact_run(tmp_path / "old", with_journal=False)), "--exact", "--dry-run"])
    assert args.func(args) == 2
    assert "holds no input journal" in capsys.readouterr().err


def test_exact_without_a_journal_warns_and_shifted_stamps_are_refused(tmp_path, capsys):
    run = exact_run(tmp_path, with_journal=False)
    args = build_parser().parse_args(["replay", str(run), "--live", "teleop", "--exact", "--dry-run"])
    assert args.func(args) == 0
    assert "teleop runs live without a recorded journal" in capsys.readouterr().err
    args = build_parser().parse_args(["replay", str(run), "--exact", "--stamps", "shifted", "--dry-run"])
    assert args.func(args) == 2
    assert "cannot be combined" in capsys.readouterr().err
    args = build_parser().parse_args(["replay", str(run), "--exact", "--loop", "--dry-run"])
    assert args.func(args) == 2
    assert "cannot be combined with --loop" in capsys.readouterr().err
    args = build_parser().parse_args(["replay", str(run), "--live", "nosuch", "--dry-run"])
    assert args.func(args) == 2


def old_contract_run(tmp_path) -> Path:
    """A run recorded when the IK was a node of its own (``ik``, with its own journal)."""
    run = tmp_path / "run"
    wiring = {"xr__controllers": "xr/controllers", "ik__joint_commands": "ik/joint_commands", "ik__journal": "ik/journal"}
    w = RunWriter(run, {"dataflow_yaml": DATAFLOW, "dataflow_dir": str(tmp_path), "recorded_inputs": wiring}, start_ns=0)
    w.append("xr__controllers", encode("LiftCommand", {"stamp_ns": 1, "velocity_m_s": 0.0}), {"seq": 0}, recv_ns=1)
    w.append("ik__joint_commands", encode("LiftCommand", {"stamp_ns": 1, "velocity_m_s": 0.0}), {"seq": 0}, recv_ns=1)
    journal = dict(stamp_ns=2, node="ik", first_step=0, step_events=[0, 1], event_inputs=["arm_targets"],
                   event_seqs=[0], step_reads=[0, 1], clock_ns=[5], outputs=["joint_commands"], output_counts=[1])
    w.append("ik__journal", encode("InputJournal", journal), {"seq": 0}, recv_ns=2)
    w.close(3)
    return run


def test_a_run_of_the_separate_ik_node_is_refused_exactly_and_replays_on_a_given_dataflow(tmp_path, capsys):
    run = old_contract_run(tmp_path)
    args = build_parser().parse_args(["replay", str(run), "--exact", "--dry-run"])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert "no longer exist" in err and "'ik'" in err and "inside the teleop node" in err and "without --exact" in err
    args = build_parser().parse_args(["replay", str(run), "--replace", "xr", "--dry-run"])
    assert args.func(args) == 2
    assert "pass --dataflow FILE" in capsys.readouterr().err
    given = tmp_path / "today.yml"
    given.write_text(DATAFLOW.replace("outputs: [arm_targets]", "outputs: [arm_targets, joint_commands]"))
    args = build_parser().parse_args(["replay", str(run), "--dataflow", str(given), "--replace", "xr,teleop", "--dry-run"])
    assert args.func(args) == 0
    nodes = {n["id"]: n for n in yaml.safe_load(capsys.readouterr().out)["nodes"]}
    # the old run's IK commands are replayed as teleop's, where today's arms read them
    assert nodes["teleop"]["path"].endswith("replayer.py") and "joint_commands" in nodes["teleop"]["outputs"]
