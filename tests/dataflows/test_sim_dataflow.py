"""The whole sim dataflow under `dora run`: the demo the README promises.

One run (about 80 s, longer on a loaded machine) is shared by every assertion in this module.
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
        cwd=REPO, capture_output=True, text=True, timeout=420, env=env,
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
        "teleop__joint_commands", "arms__servo_targets", "arms__joint_states", "base__wheel_commands", "base__odom",
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


def test_base_drove_the_loop_turned_and_the_lift_rose(demo_run) -> None:
    import numpy as np

    reader = RunReader(demo_run[0])
    odom = _messages(reader, "base__odom", "Odometry")
    gt = _messages(reader, "sim__ground_truth", "GroundTruth")
    xy = np.array([(g["x"], g["y"]) for g in gt])
    length = float(np.sum(np.linalg.norm(np.diff(xy, axis=0), axis=1)))
    turned = np.diff(np.unwrap([g["yaw"] for g in gt]))
    print(f"loop: {length:.2f} m, turned {np.degrees(turned[turned > 0].sum()):.0f} deg left, "
          f"{np.degrees(-turned[turned < 0].sum()):.0f} deg right, ends at {xy[-1].round(2).tolist()}")
    # the script drives a 6.4 m loop with five left corners and one right turn
    # (tests/operators/xr/test_demo_loop.py), steering to each corner from
    # odometry: a loaded machine takes longer but drives the same loop
    assert length > 6.0
    assert np.linalg.norm(xy[-1]) < 0.1 and abs(gt[-1]["yaw"]) < np.radians(5.0)
    assert turned[turned > 0].sum() > np.radians(430) and turned[turned < 0].sum() < -np.radians(80)
    lift = _messages(reader, "lift__state", "LiftState")
    assert lift[-1]["homed"] and max(s["height_m"] for s in lift) > 0.1  # 9.5 s up at 0.027 m/s when unloaded
    assert abs(gt[-1]["x"] - odom[-1]["x"]) < 0.05  # the sim's base follows odometry


def test_the_base_never_came_near_an_obstacle(demo_run) -> None:
    """Every 5th ground-truth sample (10 Hz): the posed robot, arms and lift
    included, stays clear of the room's walls, tables and pillar. The nominal
    path keeps 0.3 m at the home arm posture (tests/operators/xr/test_demo_loop.py);
    a real run holds the arms where the operator's hands put them and, on a
    loaded machine, overshoots corners a little: measured 0.18-0.31 m."""
    import mujoco

    from teledora import models
    from teledora.operators.sim.obstacle_clearance import ObstacleClearance

    profile = models.load_profile()
    clearance = ObstacleClearance(mujoco.MjModel.from_xml_path(str(models.path(profile.scene))), profile)
    gt = _messages(RunReader(demo_run[0]), "sim__ground_truth", "GroundTruth")
    worst = min(
        (clearance.at(g["x"], g["y"], g["yaw"], g["lift_height_m"], dict(zip(g["joint_names"], g["joint_position"]))) for g in gt[::5]),
        key=lambda c: c.distance_m,
    )
    print(f"nearest obstacle: {worst}")
    assert worst.distance_m > 0.1, worst


def test_the_run_exports_to_an_mcap_foxglove_draws_in_3d(demo_run, tmp_path) -> None:
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    from teledora.operators.scene.robot_frames import Transform, resolve
    from teledora.recording.mcap_export import export_mcap

    counts = export_mcap(RunReader(demo_run[0]), tmp_path / "run.mcap")
    schemas: dict[str, str] = {}
    latest: dict[str, Transform] = {}
    frames_used: set[str] = set()
    decoder = DecoderFactory()
    with open(tmp_path / "run.mcap", "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages():
            schemas[channel.topic] = schema.name
            if channel.message_encoding != "protobuf":
                continue
            msg = decoder.decoder_for("protobuf", schema)(message.data)
            if schema.name == "foxglove.FrameTransforms":
                for t in msg.transforms:
                    latest[t.child_frame_id] = Transform(t.parent_frame_id, t.child_frame_id, (0, 0, 0), (0, 0, 0, 1))
            elif schema.name == "foxglove.SceneUpdate":
                frames_used |= {e.frame_id for e in msg.entities}
            elif hasattr(msg, "frame_id"):
                frames_used.add(msg.frame_id)
    assert schemas["/tf"] == "foxglove.FrameTransforms" and schemas["/foxglove/robot"] == "foxglove.SceneUpdate"
    for topic in ("lidar_front/scan", "lidar_back/scan", "scan_merger/scan"):
        assert schemas[f"/foxglove/{topic}"] == "foxglove.LaserScan", topic
    for topic in ("base/odom", "ekf/pose", "mocap/pose", "sim/ground_truth"):
        assert schemas[f"/foxglove/{topic}"] == "foxglove.PoseInFrame", topic
    assert schemas["/foxglove/cameras/chest"] == "foxglove.CompressedImage"
    assert schemas["/foxglove/cameras/chest/calib"] == "foxglove.CameraCalibration"
    assert {"lidar_front", "lidar_back", "base_link", "chest", "world", "odom"} <= frames_used
    for frame in frames_used:
        resolve(list(latest.values()), "world", frame)  # raises if the chain breaks
    assert counts["/base/odom"] == counts["/foxglove/base/odom"] > 100


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


def test_demo_marks_two_episodes_and_exports_them(demo_run, tmp_path) -> None:
    """The script's four left X+Y chords: start, keep, start, keep (docs/datasets.md)."""
    run_dir, _ = demo_run
    reader = RunReader(run_dir)
    marks = _messages(reader, "episodes__marks", "EpisodeMark")
    assert [m["event"] for m in marks] == ["start", "keep", "start", "keep"]
    proc = subprocess.run(
        [str(BIN / "teledora"), "log", "export", str(run_dir), "--format", "lerobot", "-o", str(tmp_path / "ds"),
         "--codec", "libx264"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    info = json.loads((tmp_path / "ds" / "meta" / "info.json").read_text())
    assert info["total_episodes"] == 2 and info["total_frames"] > 0, proc.stdout[-3000:]
