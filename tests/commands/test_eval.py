"""`teledora eval odometry` end to end on small recordings written in the run format."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from teledora.cli import main as cli
from teledora.operators.contract.messages import encode
from teledora.recording import RunWriter, record_schema

T0 = 1_700_000_000_000_000_000


def truth_pose(t: float) -> tuple[float, float, float]:
    """A figure-eight (x, y, yaw) at time t."""
    x, y = 2.0 * math.sin(0.6 * t), math.sin(1.2 * t)
    return x, y, math.atan2(1.2 * math.cos(1.2 * t), 1.2 * math.cos(0.6 * t))


def mocap_msg(k: int, t: float, valid: bool = True) -> pa.Array:
    x, y, yaw = truth_pose(t)
    return encode("MocapPose", dict(
        stamp_ns=T0 + round(t * 1e9), frame_id="world", rigid_body_id=1, name="alohamini2",
        position=[x, y, 0.0] if valid else [math.nan] * 3,
        orientation=[0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)] if valid else [math.nan] * 4,
        tracking_valid=valid, mean_error_m=0.0002, frame_number=k + 1,
    ))


def ekf_msg(t: float, x: float, y: float, yaw: float) -> pa.Array:
    return encode("PoseEstimate", dict(
        stamp_ns=T0 + round(t * 1e9), frame_id="odom", x=x, y=y, yaw=yaw, vx=0.0, vy=0.0, wz=0.0,
        covariance=[0.0] * 9, source="onboard",
    ))


def record(run: Path, estimate: callable, invalid=range(300, 330), seconds: float = 6.0) -> Path:
    """mocap/pose at 120 Hz (with a tracking dropout) and ekf/pose at 50 Hz, interleaved like live."""
    writer = RunWriter(run, {"dataflow": "test"}, start_ns=T0)
    events = [(k / 120.0, "mocap__pose", k) for k in range(int(seconds * 120) + 1)]
    events += [(k / 50.0, "ekf__pose", k) for k in range(1, int(seconds * 50))]
    for t, topic, k in sorted(events):
        value = mocap_msg(k, t, k not in invalid) if topic == "mocap__pose" else ekf_msg(t, *estimate(t))
        writer.append(topic, value, {}, recv_ns=T0 + round(t * 1e9) + 1_000_000)
    writer.close(T0 + round(seconds * 1e9))
    return run


def offset_estimate(t: float) -> tuple[float, float, float]:
    x, y, yaw = truth_pose(t)
    return x + 0.3, y - 0.4, yaw


def test_constant_offset_without_alignment(tmp_path, capsys):
    run = record(tmp_path / "run", offset_estimate)
    rc = cli(["eval", "odometry", str(run), "--align", "none", "--quiet"])
    assert rc == 0
    s = json.loads((run / "eval" / "odometry.json").read_text())
    assert s["ape_m"]["rmse"] == pytest.approx(0.5, abs=1e-3)  # interpolation between 120 Hz samples
    assert s["ape_m"]["max"] == pytest.approx(0.5, abs=2e-3)
    assert s["alignment"]["method"] == "none"
    assert s["truth"]["tracking_invalid"] == 30 and s["truth"]["used"] == 721 - 30
    # truth is missing from 2.4917 s to 2.75 s: estimate samples 2.50..2.74 s (13) have no truth on both sides
    assert s["association"]["associated_samples"] == s["association"]["estimate_samples"] - 13
    assert (run / "eval" / "odometry.png").stat().st_size > 10_000
    out = capsys.readouterr().out
    assert "APE" in out and "alignment none" in out


def test_rotated_lagged_estimate_recovered_with_se2_and_lag_search(tmp_path):
    theta, tau = 0.7, 0.06

    def estimate(t: float):
        x, y, yaw = truth_pose(t - tau)
        c, s = math.cos(theta), math.sin(theta)
        return c * x - s * y + 1.0, s * x + c * y, yaw + theta

    run = record(tmp_path / "run", estimate)
    out = tmp_path / "report"
    rc = cli(["eval", "odometry", str(run), "--estimate-lag", "--max-lag", "0.2", "--out", str(out), "--no-plot",
              "--quiet"])
    assert rc == 0
    s = json.loads((out / "odometry.json").read_text())
    assert s["association"]["lag_estimated"] is True
    assert s["association"]["lag_s"] == pytest.approx(tau, abs=1e-3)
    assert s["alignment"]["yaw_rad"] == pytest.approx(-theta, abs=1e-3)
    assert s["ape_m"]["rmse"] < 2e-3
    assert s["yaw_error_rad"]["max"] < 5e-3
    assert not (out / "odometry.png").exists()


def test_reads_files_written_directly_with_pyarrow(tmp_path):
    """The command depends on the documented columns, not on the writer's code."""
    run = tmp_path / "run"
    run.mkdir()
    for topic, make, rate in (("mocap__pose", lambda k, t: mocap_msg(k, t), 120.0),
                              ("ekf__pose", lambda k, t: ekf_msg(t, *offset_estimate(t)), 40.0)):
        values = [make(k, k / rate) for k in range(int(5 * rate))]
        schema = record_schema(values[0].type, topic)
        stamps = [v.field("stamp_ns")[0].as_py() for v in values]
        batch = pa.RecordBatch.from_arrays([
            pa.array(range(len(values)), pa.uint64()), pa.array(stamps, pa.int64()), pa.array(stamps, pa.int64()),
            pa.array(stamps, pa.int64()), pa.array(["{}"] * len(values)),
            pa.ListArray.from_arrays(pa.array(np.arange(len(values) + 1), pa.int32()), pa.concat_arrays(values)),
        ], schema=schema)
        with ipc.new_stream(str(run / f"{topic}.arrow"), schema) as w:
            w.write_batch(batch)
    assert cli(["eval", "odometry", str(run), "--align", "origin", "--no-plot", "--quiet"]) == 0
    s = json.loads((run / "eval" / "odometry.json").read_text())
    assert s["ape_m"]["max"] == pytest.approx(0.0, abs=1e-3)
    assert s["association"]["fraction_associated"] == 1.0


def test_clear_errors(tmp_path, capsys):
    run = record(tmp_path / "run", offset_estimate, seconds=2.0)
    assert cli(["eval", "odometry", str(run), "--estimate", "base/odom", "--quiet"]) == 2
    assert "no recording of base/odom" in capsys.readouterr().err
    assert cli(["eval", "odometry", str(run), "--truth", "mocap", "--quiet"]) == 2
    assert "node/output" in capsys.readouterr().err
    assert cli(["eval", "odometry", str(tmp_path / "missing"), "--quiet"]) == 2
    assert cli(["eval"]) == 2
