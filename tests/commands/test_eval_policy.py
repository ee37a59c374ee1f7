"""`teledora eval policy`: the refusal of a checkpoint until the policy node
exists, and the judging of a recorded seeded pick-and-place run
(``--judge-only``, on a run written in the run format)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from teledora.cli import main as cli
from teledora.models.config_files import load_pick_place_random
from teledora.operators.contract.messages import encode
from teledora.operators.sim.pick_place_layout import placements
from teledora.recording import RunWriter

T0 = 1_700_000_000_000_000_000
LAYOUT = load_pick_place_random()


def write_run(run: Path, seed: int, place: list[tuple[float, float, float]], gripper_at_keep: float = 0.0,
              drops: tuple[int, ...] = ()) -> Path:
    """A run whose cube ends each episode at ``place[k]`` (x, y, z), the
    episodes marked START / KEEP, the gripper at ``gripper_at_keep`` by each KEEP."""
    writer = RunWriter(run, {"dataflow": "test"}, start_ns=T0)
    start = placements(LAYOUT, seed, len(place))[0]
    names = ["cube_red", "cube_blue"]
    t = T0

    def objects(x: float, y: float, z: float) -> None:
        writer.append("sim__objects", encode("ObjectPoses", dict(
            stamp_ns=t, frame_id="world", names=names, x=[x, 0.44], y=[y, -1.47], z=[z, 0.42],
            qx=[0.0, 0.0], qy=[0.0, 0.0], qz=[0.0, 0.0], qw=[1.0, 1.0])), {}, recv_ns=t + 1000)

    def joints(g: float) -> None:
        writer.append("sim__joint_states", encode("JointState", dict(
            stamp_ns=t, names=["left_gripper", "right_gripper"], position=[g, 0.0], velocity=[], effort=[])), {},
            recv_ns=t + 1000)

    def mark(event: str) -> None:
        writer.append("episodes__marks", encode("EpisodeMark", dict(stamp_ns=t, event=event, task="t")), {},
                      recv_ns=t + 1000)

    objects(start[0], start[1], 0.42)
    for k, (x, y, z) in enumerate(place):
        t += 1_000_000_000
        mark("start")
        t += 1_000_000_000
        for _ in range(drops[k] if drops else 0):  # teleop fell behind inside the episode
            t += 1000
            writer.append("teleop__state", encode("TeleopState", dict(
                stamp_ns=t, estop_latched=False, release_armed=False, arms_paused=False, left_clutched=False,
                right_clutched=False, left_slow=False, right_slow=False, left_pinch="", right_pinch="", reset_count=0,
                events=["left_anchor_dropped"])), {}, recv_ns=t + 1000)
        joints(0.4)
        objects(x, y, z + 0.05)  # carried
        t += 1_000_000_000
        joints(gripper_at_keep)
        objects(x, y, z)
        t += 1_000_000
        mark("keep")
    writer.close(t + 1_000_000_000)
    return run


def test_a_checkpoint_that_is_not_a_directory_is_refused(tmp_path, capsys) -> None:
    rc = cli(["eval", "policy", str(tmp_path / "model.safetensors"), "--episodes", "2", "--runs-dir", str(tmp_path)])
    assert rc == 2
    assert "not a checkpoint directory" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # nothing ran


def test_a_checkpoint_runs_the_policy_dataflow_with_the_handback_operator(tmp_path, monkeypatch) -> None:
    from teledora.commands import demo
    from teledora.models.config_files import load_demo_script
    from teledora.operators.sim.pick_place_layout import EPISODES_ENV, SEED_ENV

    seen = {}

    def fake_run(args, dataflow, run_dir, env, script_name, view_dir):
        seen.update(dataflow=dataflow, run_dir=run_dir, env=env)
        return 0

    monkeypatch.setattr(demo, "_run_dataflow", fake_run)
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    cli(["eval", "policy", str(checkpoint), "--episodes", "3", "--seed", "4", "--runs-dir", str(tmp_path / "runs")])
    env = seen["env"]
    assert seen["dataflow"] == demo.POLICY_DATAFLOW
    assert env["TELEDORA_POLICY_CHECKPOINT"] == str(checkpoint.resolve())
    assert (env[SEED_ENV], env[EPISODES_ENV]) == ("4", "3")
    script = load_demo_script(env["TELEDORA_XR_SCRIPT"])
    assert env["TELEDORA_XR_SCRIPT"] == str((seen["run_dir"] / demo.OPERATOR_SCRIPT_FILE).resolve())
    assert sum(k.ui_episode_keep for k in script.keyframes) == 3
    assert any(k.left.primary and k.right.primary for k in script.keyframes)  # the hand-back


def test_scripted_run_judged_per_episode_with_the_rate_and_its_interval(tmp_path, capsys) -> None:
    seed = 5
    goals = placements(LAYOUT, seed, 3)[1:]
    place = [(goals[0][0] + 0.005, goals[0][1], 0.42), (goals[1][0], goals[1][1] + 0.05, 0.42), (*goals[2], 0.421)]
    run = write_run(tmp_path / "run", seed, place)
    rc = cli(["eval", "policy", "scripted", "--episodes", "3", "--seed", str(seed), "--judge-only", str(run)])
    assert rc == 0
    out = capsys.readouterr().out
    assert "episode 2" in out and "from the goal" in out
    assert "2/3 placed, success rate 67% (Wilson 95 % interval 21% to 94%)" in out
    summary = json.loads((run / "eval" / "policy.json").read_text())
    assert [e["success"] for e in summary["per_episode"]] == [True, False, True]
    assert summary["wilson_95"] == pytest.approx([0.2077, 0.9385], abs=1e-4)
    assert summary["per_episode"][0]["goal_xy_m"] == pytest.approx(list(goals[0]))


def test_a_cube_still_gripped_at_keep_is_a_failure(tmp_path, capsys) -> None:
    seed = 2
    goals = placements(LAYOUT, seed, 1)[1:]
    run = write_run(tmp_path / "run", seed, [(*goals[0], 0.42)], gripper_at_keep=0.4)
    assert cli(["eval", "policy", "scripted", "--episodes", "1", "--seed", str(seed), "--judge-only", str(run)]) == 0
    assert "0/1 placed" in capsys.readouterr().out


def test_more_episodes_asked_than_recorded_count_as_failures(tmp_path, capsys) -> None:
    seed = 9
    goals = placements(LAYOUT, seed, 2)[1:]
    run = write_run(tmp_path / "run", seed, [(*goals[0], 0.42)])
    assert cli(["eval", "policy", "scripted", "--episodes", "2", "--seed", str(seed), "--judge-only", str(run)]) == 0
    out = capsys.readouterr().out
    assert "1/2 placed" in out and "never started" in out


def test_anchor_drops_inside_an_episode_are_named_beside_its_outcome(tmp_path, capsys) -> None:
    seed = 4
    goals = placements(LAYOUT, seed, 2)[1:]
    run = write_run(tmp_path / "run", seed, [(*goals[0], 0.42), (*goals[1], 0.42)], drops=(0, 2))
    assert cli(["eval", "policy", "scripted", "--episodes", "2", "--seed", str(seed), "--judge-only", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "anchor" not in lines[0] and "dropped the left hand's anchor 2 time(s)" in lines[1]
    summary = json.loads((run / "eval" / "policy.json").read_text())
    assert [e["left_anchor_dropped"] for e in summary["per_episode"]] == [0, 2]
