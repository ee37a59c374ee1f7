"""`teledora replay`: how the recorded dataflow is rewritten."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from teledora.cli import build_parser
from teledora.commands import replay
from teledora.operators.messages import encode
from teledora.recording import RunReader, RunWriter

DATAFLOW = """
nodes:
  - id: xr
    path: ../nodes/xr_scripted.py
    outputs: [controllers, diagnostics]
    output_types: {controllers: teledora/msgs/v1/XrControllers}
  - id: teleop
    path: ../nodes/teleop.py
    inputs:
      controllers: xr/controllers
      joint_states: {source: arms/joint_states, queue_size: 1}
      tick: dora/timer/millis/10
    outputs: [arm_targets]
  - id: arms
    path: ../nodes/arms_sim.py
    inputs: {joint_commands: ik/joint_commands}
    outputs: [joint_states]
  - id: recorder
    path: ../nodes/recorder.py
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
    assert Path(teleop["path"]).is_absolute() and teleop["path"].endswith("nodes/teleop.py")


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


FAKE_DORA = "import time; print('replay xr done: 3 messages', flush=True); time.sleep(60)"


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
