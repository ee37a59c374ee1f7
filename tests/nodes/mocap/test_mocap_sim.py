"""Sim mocap node with a scripted MockNode and a fake clock."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from teledora import models
from teledora.nodes.mocap import mocap_sim
from teledora.operators.contract.messages import encode
from teledora.fakes.stepped_node import FakeClock, SteppedNode  # noqa: E402
from tests.models.profile_variant import use_profile

TICK = pa.array([0], type=pa.uint64())


def truth(stamp_ns: int, x: float) -> pa.Array:
    return encode("GroundTruth", dict(
        stamp_ns=stamp_ns, frame_id="world", x=x, y=0.0, yaw=0.0, vx=0.5, vy=0.0, wz=0.0, lift_height_m=0.0,
        joint_names=["left_gripper"], joint_position=[0.0], joint_velocity=[0.0],
    ))


def config(tmp_path: Path, **sim) -> Path:
    base = dict(rate_hz=120.0, latency_s=0.005, position_noise_m=0.0, yaw_noise_rad=0.0,
                dropout_start_probability=0.0, packet_loss_probability=0.0, rigid_body_id=4)
    base.update(sim)
    cfg = models.load_yaml("alohamini2/mocap.yaml")
    cfg["rigid_body"]["name"] = "robot"
    cfg["sim"].update(base)
    p = tmp_path / "mocap.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


def test_poses_follow_truth_at_rig_rate(tmp_path):
    clock = FakeClock()
    t0 = clock.now_ns
    script = []
    for k in range(101):  # 1 s of 100 Hz ground truth, ticks every 2 ms in between
        script.append(("ground_truth", truth(t0 + k * 10_000_000 + 10_000_000, 0.5 * k / 100), 0.002 if k else 0.01))
        script += [("tick", TICK, 0.002)] * 4
    node = SteppedNode(script, clock)
    mocap_sim.main(["--config", str(config(tmp_path))], node=node, clock=clock)
    poses = node.outputs_decoded("pose", "MocapPose")
    assert len(poses) == 121
    assert [p["frame_number"] for p in poses] == list(range(1, 122))
    for p in poses:
        t = (p["stamp_ns"] - t0 - 10_000_000) / 1e9
        assert p["position"][0] == pytest.approx(0.5 * t, abs=1e-6)
        assert p["rigid_body_id"] == 4 and p["name"] == "robot" and p["tracking_valid"]
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert json.loads(diag["details_json"])["frames"] == 121


def test_poses_name_the_world_frame_of_the_profile_it_runs_with(monkeypatch, tmp_path):
    use_profile(monkeypatch, tmp_path, world_frame="map_b")
    clock = FakeClock()
    script = [("ground_truth", truth(clock.now_ns + 10_000_000, 0.0), 0.01)] + [("tick", TICK, 0.002)] * 10
    node = SteppedNode(script, clock)
    mocap_sim.main(["--config", str(config(tmp_path))], node=node, clock=clock)
    poses = node.outputs_decoded("pose", "MocapPose")
    assert poses and {p["frame_id"] for p in poses} == {"map_b"}


def test_bad_input_rejected_and_node_keeps_going(tmp_path):
    clock = FakeClock()
    t0 = clock.now_ns
    script = [
        ("ground_truth", truth(t0, 0.0), 0.0),
        ("ground_truth", pa.array([1.0]), 0.01),  # not a GroundTruth
        ("ground_truth", truth(t0 + 20_000_000, 0.01), 0.02),
        ("tick", TICK, 0.05),
    ]
    node = SteppedNode(script, clock)
    mocap_sim.main(["--config", str(config(tmp_path))], node=node, clock=clock)
    poses = node.outputs_decoded("pose", "MocapPose")
    assert [p["frame_number"] for p in poses] == [1, 2, 3]
    diag = node.outputs_decoded("diagnostics", "Diagnostics")[-1]
    assert diag["rejected"] == 1 and "GroundTruth" in diag["last_error"]


def test_shipped_config_loads_and_dropouts_show(tmp_path):
    clock = FakeClock()
    t0 = clock.now_ns
    script = [("ground_truth", truth(t0 + k * 10_000_000, 0.005 * k), 0.01) for k in range(601)]
    node = SteppedNode(script, clock)
    mocap_sim.main(["--seed", "3"], node=node, clock=clock)  # shipped mocap.yaml
    poses = node.outputs_decoded("pose", "MocapPose")
    diag = json.loads(node.outputs_decoded("diagnostics", "Diagnostics")[-1]["details_json"])
    assert diag["frames"] == 721 and diag["seed"] == 3
    assert len(poses) == diag["frames"] - diag["lost_packets"]
    assert sum(not p["tracking_valid"] for p in poses) == diag["invalid_frames"]
