"""The sim lidar node: ray casting in the shipped scene, rotating-scan timing."""

from __future__ import annotations

import json

import numpy as np
import pytest
from dora.testing import MockNode as _MockNode

from teledora import models
from teledora.nodes.lidar import lidar_sim
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.contract.messages import decode, encode


class MockNode(_MockNode):
    """One event at a time, as a live dataflow delivers a 100 Hz input."""

    def drain(self):
        return []


def truth(stamp_ns: int, x: float = 0.0, y: float = 0.0, yaw: float = 0.0, vx: float = 0.0, wz: float = 0.0):
    return encode("GroundTruth", {
        "stamp_ns": stamp_ns, "frame_id": "world", "x": x, "y": y, "yaw": yaw, "vx": vx, "vy": 0.0, "wz": wz,
        "lift_height_m": 0.3, "joint_names": ["vertical_move"], "joint_position": [0.0], "joint_velocity": [0.0],
    })


def quiet_config(tmp_path):
    cfg = models.load_yaml("alohamini2/lidar.yaml")
    cfg["sim"].update(range_noise_std_m=0.0, range_noise_fraction=0.0, dropout_probability=0.0)
    path = tmp_path / "lidar.yaml"
    path.write_text(json.dumps(cfg))
    return path


def run(tmp_path, lidar: str, duration_s: float, v: float = 0.0, extra=()):
    inputs = []
    for k in range(int(duration_s * 100) + 1):
        t = k * 0.01
        inputs.append(("ground_truth", truth(1_000_000_000 + k * 10_000_000, x=v * t, vx=v)))
    node = MockNode(inputs)
    lidar_sim.main(["--lidar", lidar, "--config", str(quiet_config(tmp_path)), *extra], node=node)
    return node, [LaserScan.from_message(decode("LaserScan", s)) for s in node.outputs.get("scan", [])]


def _ray_at(scan: LaserScan, deg: float) -> int:
    return int(np.argmin(np.abs(np.angle(np.exp(1j * (scan.angles() - np.radians(deg)))))))


def test_front_lidar_sees_the_room_and_the_robot_itself(tmp_path):
    node, scans = run(tmp_path, "front", 0.6)
    assert len(scans) == 3  # 5.5 Hz over 0.6 s of poses
    scan = scans[0]
    assert scan.frame_id == "lidar_front" and len(scan) == 360 and scan.time_increment < 0
    # scene.xml: east wall inner face at x = 3.0, front lidar at x = 0.17
    assert scan.ranges[_ray_at(scan, 0.0)] == pytest.approx(3.0 - 0.17, abs=0.005)
    # straight behind: the battery box on the base, 0.14 m away (the robot's own body), inside the
    # A1's 0.15 m minimum range: reported as too close
    assert scan.ranges[_ray_at(scan, 180.0)] == -np.inf
    assert scans[1].stamp_ns - scans[0].stamp_ns == pytest.approx(1e9 / 5.5, abs=1)
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert json.loads(diag["details_json"])["turns"] == 3


def test_back_lidar_at_10_hz_faces_backwards(tmp_path):
    _, scans = run(tmp_path, "back", 0.35)
    assert len(scans) == 3
    scan = scans[0]
    assert scan.scan_time == pytest.approx(0.1)
    # 2000 samples/s at 10 Hz: 200 samples on the 360-sector grid, the rest NaN
    assert np.count_nonzero(~np.isnan(scan.ranges)) == 200
    # the back lidar's +x looks at the west wall (inner face x = -3.0) from x = -0.17
    assert np.nanmin(np.abs(scan.ranges[[_ray_at(scan, d) for d in (-0.9, 0.0, 0.9)]] - (3.0 - 0.17))) < 0.005


def test_each_ray_is_cast_at_its_own_time_while_driving(tmp_path):
    v = 0.25
    _, scans = run(tmp_path, "front", 0.4, v=v)
    scan = scans[0]
    times = scan.ray_stamps_ns()
    for deg in (0.5, -0.5):  # first and last sector of the turn, both facing the east wall
        i = _ray_at(scan, deg)
        x_base = v * (times[i] - 1_000_000_000) * 1e-9
        expected = (3.0 - 0.17 - x_base) / np.cos(np.radians(deg))
        assert scan.ranges[i] == pytest.approx(expected, abs=0.002)
    # one turn apart: the robot moved 0.25 m/s * ~0.18 s towards the wall in between
    first, last = scan.ranges[_ray_at(scan, -0.5)], scan.ranges[_ray_at(scan, 0.5)]
    assert first - last > 0.04


def test_bad_pose_messages_are_rejected_without_stopping(tmp_path):
    inputs = [("ground_truth", truth(1_000_000_000 + k * 10_000_000)) for k in range(30)]
    inputs.insert(5, ("ground_truth", encode("Odometry", {
        "stamp_ns": 1, "frame_id": "odom", "child_frame_id": "base_link", "x": 0.0, "y": 0.0, "yaw": 0.0,
        "vx": 0.0, "vy": 0.0, "wz": 0.0})))
    inputs.insert(8, ("ground_truth", truth(1_000_000_000)))  # a stamp going backwards
    node = MockNode(inputs)
    lidar_sim.main(["--lidar", "front", "--config", str(quiet_config(tmp_path))], node=node)
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["rejected"] == 1 and diag["dropped"] == 1
    assert len(node.outputs["scan"]) == 1


def test_an_isolated_range_spike_is_set_to_nan_and_counted_after_the_first_turn(tmp_path, monkeypatch):
    """The sim lidar screens its scans as the hardware node does: a sample a metre short,
    at a new bearing each turn, stays in the first turn and is NaN in every later one."""
    measure = lidar_sim.SimLidarBackend._measure
    spiked_samples: list[int] = []

    def measure_with_a_spike(self, true_m):
        out = measure(self, true_m)
        k = (10, 330, 40, 300)[len(spiked_samples) % 4]
        spiked_samples.append(k)
        out[k] -= 1.0
        return out

    monkeypatch.setattr(lidar_sim.SimLidarBackend, "_measure", measure_with_a_spike)
    node, scans = run(tmp_path, "front", 0.75)
    assert len(scans) == 4
    for n, (scan, k) in enumerate(zip(scans, spiked_samples)):
        angle_cw = (k + 0.5) / 364 * 360.0  # 2000 samples/s at 5.5 Hz: 364 per turn
        ray = len(scan) - 1 - int(angle_cw)
        if n == 0:
            assert 0.5 < scan.ranges[ray] < 2.2  # the wall is ~2.8-3.3 m away there
        else:
            assert np.isnan(scan.ranges[ray])
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert json.loads(diag["details_json"])["outliers_rejected"] == 3
    assert diag["level"] == "warn" and "range outlier(s) set to NaN" in diag["message"]
