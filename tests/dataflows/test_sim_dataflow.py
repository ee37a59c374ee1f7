"""The whole sim dataflow under `dora run`: the demo the README promises.

One run (about 40 s) is shared by every assertion in this module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from teledora.operators.contract.messages import decode
from teledora.recording import RunReader

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_sim_dataflow_validates_with_strict_types() -> None:
    out = subprocess.run([str(BIN / "dora"), "validate", "--strict-types", "dataflows/sim.yml"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "All type annotations OK" in out.stdout


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> tuple[Path, str]:
    runs = tmp_path_factory.mktemp("runs")
    # this test is about control; on a shared, overloaded machine the recorder
    # runs seconds behind and the recorder guard would (rightly) hold the
    # robot, so its bounds are widened here (the guard still holds the robot
    # until the recorder's first heartbeat and for good if the recorder dies)
    env = dict(os.environ, MUJOCO_GL="egl", TELEDORA_RECORDER_MAX_LAG_S="120", TELEDORA_RECORDER_TIMEOUT_S="60")
    proc = subprocess.run(
        [str(BIN / "teledora"), "demo", "--runs-dir", str(runs)],
        cwd=REPO, capture_output=True, text=True, timeout=240, env=env,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    match = re.search(r"recording in (\S+)", proc.stdout)
    assert match, proc.stdout[-2000:]
    return Path(match.group(1)), output


def _messages(reader: RunReader, topic: str, kind: str) -> list[dict]:
    return [decode(kind, rec.value) for rec in reader.iter_topic(topic)]


def test_demo_ends_by_itself_and_records_every_topic(demo_run) -> None:
    run_dir, _ = demo_run
    reader = RunReader(run_dir)
    assert reader.complete
    expected = {
        "xr__controllers", "teleop__arm_targets", "teleop__base_cmd", "teleop__lift_cmd", "teleop__state",
        "ik__joint_commands", "arms__servo_targets", "arms__joint_states", "base__wheel_commands", "base__odom",
        "lift__state", "sim__joint_states", "sim__ground_truth",
    }
    assert expected <= set(reader.topics)
    for topic in expected:
        assert reader.read_topic(topic).table.num_rows > 10, topic
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert "sim.yml" in json.dumps(manifest)


def test_no_node_rejected_or_clamped_anything(demo_run) -> None:
    """The demo stays inside every cap: no actuator's command limits cut a command."""
    reader = RunReader(run_dir := demo_run[0])
    diag_topics = [t for t in reader.topics if t.endswith("__diagnostics")]
    assert len(diag_topics) >= 6, diag_topics
    for topic in diag_topics:
        last = _messages(reader, topic, "Diagnostics")[-1]
        assert last["rejected"] == 0, (topic, last["last_error"])
        assert last["clamped"] == 0, (topic, last["message"])
    for node in ("base", "lift", "arms"):
        limits = json.loads(_messages(reader, f"{node}__diagnostics", "Diagnostics")[-1]["details_json"])["limits"]
        assert limits == {"rejected": 0, "clamped": 0, "clamped_by": {}}, node


def test_base_drove_turned_and_the_lift_rose(demo_run) -> None:
    reader = RunReader(demo_run[0])
    odom = _messages(reader, "base__odom", "Odometry")
    # the script drives 3 s forward at 0.2 m/s, then turns 3 s at 0.5 rad/s; teleop zeroes
    # the sticks whenever a report is late (>300 ms), so a loaded machine drives less
    assert max(o["x"] for o in odom) > 0.25
    assert max(o["yaw"] for o in odom) > 0.5
    lift = _messages(reader, "lift__state", "LiftState")
    assert lift[-1]["homed"] and max(s["height_m"] for s in lift) > 0.05  # 3 s up at 0.064 m/s when unloaded
    gt = _messages(reader, "sim__ground_truth", "GroundTruth")
    assert abs(gt[-1]["x"] - odom[-1]["x"]) < 0.05  # the sim's base follows odometry


def test_grippers_closed_on_the_trigger(demo_run) -> None:
    reader = RunReader(demo_run[0])
    states = _messages(reader, "arms__joint_states", "JointState")
    closure = [dict(zip(s["names"], s["position"]))["left_gripper"] for s in states]
    assert max(closure) > 0.5


def test_grips_reach_settled_targets_within_5_mm_p95(demo_run) -> None:
    from teledora.commands.tracking import tracking_summary

    summary = tracking_summary(demo_run[0])
    assert set(summary) == {"left", "right"}
    for side, s in summary.items():
        print(f"{side}: p95 {s['p95_m'] * 1e3:.2f} mm over {s['samples']} settled samples")
        assert s["samples"] > 50
        assert s["p95_m"] < 0.005, summary
