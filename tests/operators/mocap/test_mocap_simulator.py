"""Simulated mocap rig: sampling grid, interpolation, latency, noise, dropouts."""

from __future__ import annotations

import math

from dataclasses import replace

import numpy as np
import pytest

from teledora.operators.contract.messages import encode
from teledora import models
from teledora.models.config_files import load_mocap_config
from teledora.operators.mocap.mocap_simulator import MocapSimConfig, MocapSimError, MocapSimulator

T0 = 1_700_000_000_000_000_000
MOCAP = load_mocap_config()
SIM = MOCAP.sim  # the shipped 120 Hz rig
CLEAN = dict(position_noise_m=0.0, yaw_noise_rad=0.0, dropout_start_probability=0.0, packet_loss_probability=0.0)


def rig_of(config: MocapSimConfig) -> MocapSimulator:
    return MocapSimulator(config, MOCAP.rigid_body.name, "world_test")


def feed(rig: MocapSimulator, seconds: float, truth_hz: float = 100.0, vx: float = 0.5, wz: float = 0.2) -> None:
    for k in range(int(seconds * truth_hz) + 1):
        t = k / truth_hz
        rig.add_truth(T0 + int(round(t * 1e9)), vx * t, 0.1, wz * t)


def test_clean_rig_samples_truth_on_a_120hz_grid():
    rig = rig_of(replace(SIM, latency_s=0.006, **CLEAN))
    feed(rig, 1.0)
    poses = rig.due(T0 + 2 * 10**9)
    assert len(poses) == 121  # exposures at 0, 1/120, ..., 1 s
    for k, p in enumerate(poses):
        t = (p["stamp_ns"] - T0) / 1e9
        assert t == pytest.approx(k / 120, abs=1e-6)  # grid period rounded to whole ns
        assert p["frame_number"] == k + 1
        assert p["position"] == pytest.approx([0.5 * t, 0.1, 0.0], abs=1e-9)
        assert 2 * math.atan2(p["orientation"][2], p["orientation"][3]) == pytest.approx(0.2 * t, abs=1e-9)
        encode("MocapPose", p)


def test_latency_holds_frames_back_exactly():
    rig = rig_of(replace(SIM, latency_s=0.010, **CLEAN))
    feed(rig, 0.1)
    exposure = T0 + round(1e9 / 120)
    first = rig.due(T0 + 10_000_000)
    assert [p["frame_number"] for p in first] == [1]
    assert rig.due(exposure + 10_000_000 - 1) == []
    assert [p["frame_number"] for p in rig.due(exposure + 10_000_000)] == [2]


def test_yaw_interpolates_across_the_wrap():
    rig = rig_of(replace(SIM, rate_hz=200.0, latency_s=0.0, **CLEAN))
    rig.add_truth(T0, 0, 0, math.pi - 0.01)
    rig.add_truth(T0 + 10_000_000, 0, 0, -math.pi + 0.01)  # turned +0.02 rad through ±pi
    mid = rig.due(T0 + 10**9)[1]
    yaw = 2 * math.atan2(mid["orientation"][2], mid["orientation"][3])
    assert abs(math.remainder(yaw - math.pi, 2 * math.pi)) == pytest.approx(0.0, abs=1e-9)


def test_noise_is_sub_millimetre_with_configured_sigma():
    rig = rig_of(replace(SIM, position_noise_m=0.0003, yaw_noise_rad=0.001, dropout_start_probability=0.0,
                                        packet_loss_probability=0.0, seed=3))
    feed(rig, 40.0, vx=0.0, wz=0.0)
    poses = rig.due(T0 + 100 * 10**9)
    xs = np.array([p["position"][0] for p in poses])
    yaw = np.array([2 * math.atan2(p["orientation"][2], p["orientation"][3]) for p in poses])
    assert len(xs) == 4801
    assert np.std(xs) == pytest.approx(0.0003, rel=0.1)
    assert np.std(yaw) == pytest.approx(0.001, rel=0.1)
    assert np.max(np.abs(xs)) < 5 * 0.0003


def test_dropouts_are_invalid_and_lost_packets_skip_frame_numbers():
    cfg = replace(SIM, dropout_start_probability=0.02, dropout_mean_frames=5, packet_loss_probability=0.02, seed=11)
    rig = rig_of(cfg)
    feed(rig, 20.0)
    poses = rig.due(T0 + 100 * 10**9)
    numbers = [p["frame_number"] for p in poses]
    invalid = [p for p in poses if not p["tracking_valid"]]
    assert len(poses) + rig.lost_packets == rig.frames == 2401
    assert rig.lost_packets > 0 and len(invalid) == rig.invalid_frames > 0
    assert len(set(range(1, rig.frames + 1)) - set(numbers)) == rig.lost_packets
    assert all(math.isnan(p["position"][0]) for p in invalid)
    for p in invalid[:3]:
        encode("MocapPose", p)


def test_same_seed_same_stream():
    a, b = rig_of(replace(SIM, seed=5)), rig_of(replace(SIM, seed=5))
    feed(a, 2.0)
    feed(b, 2.0)
    pa_, pb = a.due(T0 + 10**10), b.due(T0 + 10**10)
    assert [p["frame_number"] for p in pa_] == [p["frame_number"] for p in pb]
    assert pa_[5]["position"] == pb[5]["position"]


def test_long_truth_gap_is_skipped_and_stale_truth_ignored():
    rig = rig_of(replace(SIM, **CLEAN))
    rig.add_truth(T0, 0, 0, 0)
    rig.add_truth(T0 + 10 * 10**9, 1, 0, 0)  # 10 s gap: 1200 frames, only the last 240 are made
    assert rig.skipped_frames == 1200 - 240
    rig.add_truth(T0 + 5 * 10**9, 1, 0, 0)
    assert rig.stale_truth == 1


def test_config_validation():
    with pytest.raises(MocapSimError):
        replace(SIM, rate_hz=0)
    with pytest.raises(MocapSimError):
        replace(SIM, packet_loss_probability=2)
    raw = models.load_yaml("alohamini2/mocap.yaml")["sim"]
    with pytest.raises(MocapSimError, match="unknown"):
        MocapSimConfig.from_mapping({**raw, "rate": 100})
    assert MocapSimConfig.from_mapping({**raw, "rate_hz": 240, "seed": 2}).rate_hz == 240.0
    with pytest.raises(MocapSimError):
        rig_of(SIM).add_truth(T0, float("nan"), 0, 0)
