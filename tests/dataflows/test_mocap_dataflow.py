"""Mocap under `dora run`: the sim rig into the recorder and `teledora eval`; the NatNet
client against the fake Motive."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from teledora.operators.contract.messages import decode
from teledora.recording import RunReader

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

GROUND_TRUTH = """
import math, time
from dora import Node
from teledora.operators.contract.messages import encode
node = Node()
for k in range(400):  # 4 s of a 1 m circle at 100 Hz
    now = time.time_ns()
    a = 0.5 * k / 100
    node.send_output("ground_truth", encode("GroundTruth", dict(
        stamp_ns=now, frame_id="world", x=math.cos(a), y=math.sin(a), yaw=math.remainder(a + math.pi / 2, 2 * math.pi),
        vx=0.5, vy=0.0, wz=0.5, lift_height_m=0.0, joint_names=["left_gripper"], joint_position=[0.0],
        joint_velocity=[0.0])))
    time.sleep(0.01)
"""


def _dora_run(tmp_path: Path, flow: dict, *extra: str) -> subprocess.CompletedProcess:
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, TELEDORA_RUN_DIR=str(tmp_path / "run"))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([str(BIN / "dora"), "run", "flow.yml", *extra], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=240)


def test_sim_rig_recorded_and_evaluated_against_ground_truth(tmp_path):
    (tmp_path / "gt.py").write_text(GROUND_TRUTH)
    flow = {"nodes": [
        {"id": "sim", "path": "gt.py", "outputs": ["ground_truth"]},
        {"id": "mocap", "path": str(REPO / "nodes" / "mocap" / "mocap_sim.py"),
         "inputs": {"ground_truth": {"source": "sim/ground_truth", "queue_policy": "backpressure", "queue_size": 1000}},
         "outputs": ["pose", "diagnostics"]},
        {"id": "recorder", "path": str(REPO / "nodes" / "recording" / "recorder.py"),
         "inputs": {t: {"source": s, "queue_policy": "backpressure", "queue_size": 1000} for t, s in (
             ("mocap__pose", "mocap/pose"), ("sim__ground_truth", "sim/ground_truth"))},
         "outputs": ["diagnostics"]},
    ]}
    out = _dora_run(tmp_path, flow)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    run = tmp_path / "run"
    reader = RunReader(run)
    poses = [decode("MocapPose", m.value) for m in reader.iter_topic("mocap__pose")]
    truth_stamps = [m.stamp_ns for m in reader.iter_topic("sim__ground_truth")]
    assert len(truth_stamps) == 400
    # frames are exposed on a 120 Hz grid anchored at the first truth sample the rig received
    period = round(1e9 / 120)
    origin = poses[0]["stamp_ns"] - (poses[0]["frame_number"] - 1) * period
    assert origin in truth_stamps
    assert all((p["stamp_ns"] - origin) == (p["frame_number"] - 1) * period for p in poses)
    expected = (truth_stamps[-1] - origin) // period + 1
    assert 0.95 * expected <= len(poses) <= expected
    assert all(b["frame_number"] > a["frame_number"] for a, b in zip(poses, poses[1:]))
    ev = subprocess.run([str(BIN / "teledora"), "eval", "odometry", str(run), "--estimate", "mocap/pose",
                         "--truth", "sim/ground_truth", "--align", "none", "--quiet", "--no-plot",
                         "--max-diff", "1.0"],  # truth pacing is loose on a loaded machine
                        capture_output=True, text=True, timeout=120)
    assert ev.returncode == 0, ev.stderr
    s = json.loads((run / "eval" / "odometry.json").read_text())
    assert s["ape_m"]["rmse"] < 0.0015  # 0.3 mm per axis of noise: 0.42 mm expected
    # every valid frame was exposed between two truth samples: all associate
    assert s["association"]["fraction_associated"] == 1.0


def test_natnet_client_against_fake_motive(tmp_path):
    from teledora.fakes.motive import FakeMotive

    from teledora.operators.mocap import natnet_protocol as nn
    from teledora.operators.mocap.mocap_frames import MocapFrameTransform
    from teledora.operators.geometry import yaw_to_quat

    from teledora import models
    from teledora.models.config_files import load_mocap_config

    tf = MocapFrameTransform(load_mocap_config().frame)
    poses = [tf.motive_pose_of_base([math.cos(k / 240), math.sin(k / 240), 0.0], yaw_to_quat(k / 240))
             for k in range(360)]
    with FakeMotive() as fake:
        cfg = models.load_yaml("alohamini2/mocap.yaml")
        cfg["natnet"].update(server_address="127.0.0.1", command_port=fake.command_port, local_address="127.0.0.1")
        (tmp_path / "mocap.yaml").write_text(yaml.safe_dump(cfg))

        def stream() -> None:
            if fake.wait_for_client(timeout_s=60):
                # frames before the body name resolves carry no pose for us: let MODEL_DEF go first
                deadline = time.monotonic() + 10
                while nn.MessageId.REQUEST_MODEL_DEF not in fake.requests and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(0.2)
                fake.stream(poses, body_id=3, drop=range(100, 104), invalid=range(200, 212), period_s=1 / 120)

        sender = threading.Thread(target=stream, daemon=True)
        sender.start()
        flow = {"nodes": [
            {"id": "mocap", "path": str(REPO / "nodes" / "mocap" / "mocap_natnet.py"),
             "args": f"--config {tmp_path / 'mocap.yaml'}", "outputs": ["pose", "diagnostics"]},
            {"id": "recorder", "path": str(REPO / "nodes" / "recording" / "recorder.py"),
             "inputs": {"mocap__pose": {"source": "mocap/pose", "queue_policy": "backpressure", "queue_size": 1000}},
             "outputs": ["diagnostics"]},
        ]}
        out = _dora_run(tmp_path, flow, "--stop-after", "15s")
        sender.join(timeout=10)
        sent = list(fake.sent)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert (tmp_path / "run" / "mocap__pose.arrow").exists(), (out.stdout + out.stderr)[-3000:]
    got = {p["frame_number"]: p for p in (decode("MocapPose", m.value)
                                          for m in RunReader(tmp_path / "run").iter_topic("mocap__pose"))}
    assert len(sent) == 356  # the whole trajectory (3 s) fits in the 15 s run
    assert sorted(got) == [s.frame_number for s in sent]
    assert sum(not p["tracking_valid"] for p in got.values()) == 12
    assert "clock offset" in out.stdout + out.stderr
