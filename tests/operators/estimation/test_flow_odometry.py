"""Flow odometry: the estimator the ekf node runs, and the accuracy drives."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from dataclasses import replace

import numpy as np
import pytest

from teledora.models.config_files import load_estimation_config
from teledora.operators.estimation.flow_model import FlowModel
from teledora.operators.estimation.flow_odometry import FlowOdometry
from teledora.operators.contract.messages import encode

CONFIG = load_estimation_config()
CFG = replace(CONFIG.flow_sensor, offset_m=(0.08, 0.05, 0.05))


def _bench():
    path = pathlib.Path(__file__).resolve().parents[3] / "benchmarks" / "estimation_accuracy.py"
    spec = importlib.util.spec_from_file_location("estimation_accuracy", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_invalid_readings_are_skipped_with_reason():
    odo = FlowOdometry(FlowModel(CFG), CONFIG.ekf, "odom_test")
    assert not odo.on_flow(0, [0.1, 0.1], 10, 0.05)
    assert "quality" in odo.last_skip_reason
    assert not odo.on_flow(10_000_000, [0.1, 0.1], 200, 0.5)
    assert odo.skipped["flow"] == 2 and odo.fused["flow"] == 0
    assert odo.on_flow(20_000_000, [0.1, 0.1], 200, 0.05)
    assert odo.counters()["fused"] == {"flow": 1}


def test_pose_is_a_valid_message():
    odo = FlowOdometry(FlowModel(CFG), CONFIG.ekf, "odom_test")
    odo.on_gyro(5, [0.0, 0.0, 0.1])
    msg = odo.pose()
    assert msg["source"] == "onboard" and msg["stamp_ns"] == 5 and msg["frame_id"] == "odom_test"
    encode("PoseEstimate", msg)  # raises on a contract violation
    cov = np.asarray(msg["covariance"]).reshape(3, 3)
    assert np.all(np.linalg.eigvalsh(cov) > 0)


def test_spin_in_place_error_small_with_offset_and_large_without():
    bench = _bench()
    flow_cfg, sim_cfg, ekf_cfg = bench.load_configs()
    drive = bench.spin_drive(rate_rad_s=0.8, duration_s=4.0)
    truth = FlowModel(flow_cfg)
    with_offset = bench.run_drive(drive, truth, FlowModel(flow_cfg), sim_cfg, ekf_cfg, truth_hz=100.0)
    without = bench.run_drive(drive, truth, FlowModel(flow_cfg.without_offset()), sim_cfg, ekf_cfg, truth_hz=100.0)
    assert with_offset.max_error_m < 0.02
    r = np.hypot(*flow_cfg.offset_m[:2])
    # forgetting the mount turns the spin into a circle of the offset's radius
    assert without.max_error_m > r
    assert without.max_error_m > 5 * with_offset.max_error_m


def test_straight_drive_tracks_distance():
    bench = _bench()
    flow_cfg, sim_cfg, ekf_cfg = bench.load_configs()
    drive = bench.straight_drive(speed_m_s=0.1, distance_m=1.0)
    res = bench.run_drive(drive, FlowModel(flow_cfg), FlowModel(flow_cfg), sim_cfg, ekf_cfg, truth_hz=100.0)
    assert res.path_length_m == pytest.approx(1.0, rel=0.01)
    assert res.final_error_m < 0.03
