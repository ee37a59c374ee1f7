"""ekf_onboard node under MockNode, fed by the flow_sim node's real outputs."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
from dora.testing import MockNode as _MockNode

from teledora.nodes.estimation import ekf_onboard

from teledora.nodes.estimation import flow_sim
from teledora.operators.contract.messages import decode, encode
from tests.models.profile_variant import use_profile

# a host clock later than every stamp the tests send (stamps ahead of a
# receiver's clock are refused), fixed so that no timer fires
AFTER_EVERY_STAMP_NS = 2**62



class MockNode(_MockNode):
    """Delivers events one at a time, as a live dataflow at sensor rates does
    (the stock mock hands the whole script to ``drain()`` at once)."""

    def drain(self):
        return []


def ground_truth(stamp_ns: int, vx: float, vy: float, wz: float, x: float, y: float, yaw: float) -> pa.Array:
    return encode("GroundTruth", {
        "stamp_ns": stamp_ns, "frame_id": "world", "x": x, "y": y, "yaw": yaw, "vx": vx, "vy": vy, "wz": wz,
        "lift_height_m": 0.0, "joint_names": ["left_shoulder_pan"], "joint_position": [0.0], "joint_velocity": [0.0],
    })


def _sensor_outputs(twist, seconds: float, args=()) -> tuple[list[tuple[str, pa.Array]], tuple[float, float, float]]:
    """Runs the flow_sim node over a constant-twist drive; returns its flow/gyro outputs in
    order, plus the true final pose."""
    vx, vy, wz = twist
    x = y = yaw = 0.0
    inputs = []
    dt = 0.01
    for k in range(int(seconds / dt) + 1):
        inputs.append(("ground_truth", ground_truth(k * 10_000_000, vx, vy, wz, x, y, yaw)))
        if k % 2 == 0:
            inputs.append(("tick", pa.array([k])))
        mid = yaw + 0.5 * wz * dt
        x += (vx * math.cos(mid) - vy * math.sin(mid)) * dt
        y += (vx * math.sin(mid) + vy * math.cos(mid)) * dt
        yaw += wz * dt
    sim_node = MockNode(inputs)
    # capture outputs in send order
    ordered: list[tuple[str, pa.Array]] = []
    send = sim_node.send_output

    def record(output_id, data, metadata=None):
        if output_id in ("flow", "gyro"):
            ordered.append((output_id, data))
        send(output_id, data, metadata)

    sim_node.send_output = record
    flow_sim.main(list(args), node=sim_node, clock=lambda: AFTER_EVERY_STAMP_NS)
    return ordered, (x, y, yaw - dt * wz)


def test_gyro_and_pose_name_the_frames_of_the_profile_they_run_with(monkeypatch, tmp_path):
    use_profile(monkeypatch, tmp_path, odom_frame="odom_b", base_frame="chassis_b")
    msgs, _ = _sensor_outputs((0.1, 0.0, 0.0), 0.5)
    assert {decode("Gyro", v)["frame_id"] for k, v in msgs if k == "gyro"} == {"chassis_b"}
    node = MockNode(msgs)
    ekf_onboard.main([], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    poses = [decode("PoseEstimate", v) for v in node.outputs["pose"]]
    assert poses and {p["frame_id"] for p in poses} == {"odom_b"}


def test_straight_drive_pose_follows_truth():
    msgs, truth = _sensor_outputs((0.1, 0.0, 0.0), 3.0)
    node = MockNode(msgs)
    ekf_onboard.main([], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    poses = [decode("PoseEstimate", v) for v in node.outputs["pose"]]
    last = poses[-1]
    assert last["source"] == "onboard" and last["frame_id"] == "odom"
    assert abs(last["x"] - truth[0]) < 0.02 and abs(last["y"]) < 0.02
    assert last["vx"] == np.float64(last["vx"]) and abs(last["vx"] - 0.1) < 0.02
    cov = np.asarray(last["covariance"]).reshape(3, 3)
    np.testing.assert_allclose(cov, cov.T)


def test_spin_in_place_offset_model_matters():
    msgs, truth = _sensor_outputs((0.0, 0.0, 0.8), 4.0)
    errs = {}
    for label, args in (("with", []), ("without", ["--no-offset-model"])):
        node = MockNode(msgs)
        ekf_onboard.main(args, node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
        poses = [decode("PoseEstimate", v) for v in node.outputs["pose"]]
        errs[label] = max(math.hypot(p["x"], p["y"]) for p in poses)
        assert abs(poses[-1]["yaw"] - math.remainder(truth[2], 2 * math.pi)) < 0.05
    assert errs["with"] < 0.02
    assert errs["without"] > 0.05


def test_bad_messages_counted_and_odom_fused():
    odom = encode("Odometry", {"stamp_ns": 10_000_000, "frame_id": "odom", "child_frame_id": "base_link",
                               "x": 0.0, "y": 0.0, "yaw": 0.0, "vx": 0.2, "vy": 0.0, "wz": 0.0})
    bad_flow = pa.array([{"stamp_ns": 1, "flow_rate_x": float("nan")}])
    gyro = encode("Gyro", {"stamp_ns": 5_000_000, "frame_id": "base_link", "angular_velocity": [0, 0, 0.0]})
    node = MockNode([("gyro", gyro), ("flow", bad_flow), ("odom", odom), ("mystery", pa.array([1]))])
    ekf_onboard.main([], node=node, clock=lambda: AFTER_EVERY_STAMP_NS)
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["rejected"] == 2
    details = json.loads(diag["details_json"])
    assert details["fused"] == {"gyro": 1, "odom": 1}
    assert decode("PoseEstimate", node.outputs["pose"][-1])["vx"] > 0.05
    assert diag["level"] == "warn"  # no flow fused


def _estimation_yaml(tmp_path, **ekf_node) -> str:
    import yaml

    from teledora import models

    data = models.load_yaml("alohamini2/estimation.yaml")
    data["ekf_node"].update(ekf_node)
    path = tmp_path / "estimation.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_the_gyro_pose_period_comes_from_estimation_yaml(tmp_path):
    """With gyro messages only (the flow sensor silent), poses go out at the
    YAML's period of measurement time."""
    msgs, _ = _sensor_outputs((0.0, 0.0, 0.5), 2.0)
    gyro_only = [(k, v) for k, v in msgs if k == "gyro"]
    gaps = {}
    for period_s in (0.1, 0.5):
        node = MockNode(gyro_only)
        ekf_onboard.main(["--config", _estimation_yaml(tmp_path, gyro_publish_period_s=period_s)], node=node,
                         clock=lambda: AFTER_EVERY_STAMP_NS)
        stamps = [decode("PoseEstimate", v)["stamp_ns"] for v in node.outputs["pose"]]
        gaps[period_s] = [b - a for a, b in zip(stamps, stamps[1:])]
        assert len(stamps) >= 3 and all(g >= period_s * 1e9 for g in gaps[period_s])
    assert min(gaps[0.1]) < 0.5e9  # the shorter period publishes more often


def test_a_gyro_pose_period_of_zero_is_refused(tmp_path):
    import pytest

    with pytest.raises(ValueError, match="ekf_node.gyro_publish_period_s"):
        ekf_onboard.main(["--config", _estimation_yaml(tmp_path, gyro_publish_period_s=0.0)], node=MockNode([]))
