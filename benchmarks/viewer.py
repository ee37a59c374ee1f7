"""Viewer: CPU per second of robot time and per message, shipped decimation vs none.

Feeds the messages of `seconds` of a sim run (every topic the viewer listens
to in `teledora demo --view`, at its nominal sim rate from rates.yaml; two
640x480 cameras at 3 Hz as in renderer.yaml) through what the viewer node does
with each message it takes: decode, map (robot forward kinematics, scans,
trajectories, plots; decimated messages are not even decoded) and log to a Rerun recording (an .rrd file here; the live
viewer gets the same bytes over gRPC). The node's newest-per-input and dora's
queue are left out: every message is handled, the worst case for the node.

CPU is the process's CPU time (Rerun's encoder and writer threads included)
over the robot time fed: 0.05 means the viewer keeps up with the robot using
5% of one core. Rounds alternate the two configs so both see the same machine.

    python benchmarks/viewer.py [--seconds 10] [--rounds 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import yaml

from teledora import models
from teledora.devices.viewing.rerun_sink import RerunSink, log_message
from teledora.devices.viewing.robot_model import load_robot_binding
from teledora.models.config_files import load_rate_table, load_renderer_config, load_viewer_config
from teledora.fakes.mjpeg_camera import FakeMjpegCamera
from teledora.operators.contract.messages import encode, image_metadata
from teledora.operators.dataflow.viewer_node import with_viewer
from teledora.operators.viewing.view_mapping import ViewMapper
from teledora.operators.viewing.viewer_config import ViewRates

REPO = Path(__file__).resolve().parents[1]
T0 = 1_800_000_000_000_000_000


def factories(joints: list[str]):
    """Message kind -> (i, stamp) -> (value, metadata)."""
    n = len(joints)
    scan_ranges = np.where(np.arange(360) % 7 == 0, np.inf, 2.5).astype(np.float32)
    # a camera frame as the cameras send it: one JPEG of a detailed 640x480 picture
    jpeg = pa.array(np.frombuffer(FakeMjpegCamera(640, 480, textured=True).jpeg(0), np.uint8))
    target = {"enabled": True, "position": [0.3, 0.2, 0.9], "orientation": [0.0, 0.0, 0.0, 1.0], "gripper": 0.0, "slow": False}
    pose = dict(yaw=0.1, vx=0.2, vy=0.0, wz=0.1)
    return {
        "JointState": lambda i, t: (encode("JointState", {"stamp_ns": t, "names": joints, "position": [0.001 * i] * n,
                                                          "velocity": [0.0] * n, "effort": []}), {}),
        "JointCommands": lambda i, t: (encode("JointCommands", {"stamp_ns": t, "names": joints, "q_ref": [0.001 * i] * n,
                                                                "dq_ref": [0.0] * n, "status": "ok"}), {}),
        "LiftState": lambda i, t: (encode("LiftState", {"stamp_ns": t, "height_m": 0.1, "velocity_m_s": 0.0, "homed": True}), {}),
        "LiftCommand": lambda i, t: (encode("LiftCommand", {"stamp_ns": t, "velocity_m_s": 0.0}), {}),
        "BaseCommand": lambda i, t: (encode("BaseCommand", {"stamp_ns": t, "forward_m_s": 0.2, "left_m_s": 0.0, "yaw_rad_s": 0.1}), {}),
        "Odometry": lambda i, t: (encode("Odometry", {"stamp_ns": t, "frame_id": "odom", "child_frame_id": "base_link",
                                                      "x": 0.002 * i, "y": 0.0, **pose}), {}),
        "GroundTruth": lambda i, t: (encode("GroundTruth", {"stamp_ns": t, "frame_id": "world", "x": 0.002 * i, "y": 0.0, **pose,
                                                            "lift_height_m": 0.1, "joint_names": joints,
                                                            "joint_position": [0.0] * n, "joint_velocity": [0.0] * n}), {}),
        "PoseEstimate": lambda i, t: (encode("PoseEstimate", {"stamp_ns": t, "frame_id": "odom", "x": 0.002 * i, "y": 0.0, **pose,
                                                              "covariance": [0.0] * 9, "source": "onboard"}), {}),
        "MocapPose": lambda i, t: (encode("MocapPose", {"stamp_ns": t, "frame_id": "world", "rigid_body_id": 1, "name": "am2",
                                                        "position": [0.002 * i, 0.0, 0.3], "orientation": [0.0, 0.0, 0.0, 1.0],
                                                        "tracking_valid": True, "mean_error_m": 0.001, "frame_number": i}), {}),
        "LaserScan": lambda i, t: (encode("LaserScan", {"stamp_ns": t, "frame_id": "lidar_front", "angle_min": -math.pi,
                                                        "angle_max": math.pi - math.radians(1), "angle_increment": math.radians(1),
                                                        "time_increment": 0.0, "scan_time": 0.18, "range_min": 0.15,
                                                        "range_max": 12.0, "ranges": scan_ranges, "intensities": []}), {}),
        "ArmTargets": lambda i, t: (encode("ArmTargets", {"stamp_ns": t, "frame_id": "base_link", "left": target,
                                                          "right": target}), {}),
        "Diagnostics": lambda i, t: (encode("Diagnostics", {"stamp_ns": t, "node": "x", "level": "ok", "message": "",
                                                            "received": i, "sent": i, "rejected": 0, "clamped": 0, "dropped": 0,
                                                            "last_error": "", "details_json": "{}"}), {}),
        "Image": lambda i, t: (jpeg, image_metadata(width=640, height=480, encoding="jpeg", camera="chest", stamp_ns=t,
                                                      fx=400, fy=400, cx=320, cy=240)),
    }


def messages(seconds: float) -> list[tuple[int, str, pa.Array, dict]]:
    sim = yaml.safe_load((REPO / "dataflows" / "sim.yml").read_text())
    viewer = with_viewer(sim, str(REPO / "dataflows"), None)["nodes"][-1]
    rates = load_rate_table()
    renderer = load_renderer_config()
    profile = models.load_profile()
    make = factories([*profile.arms["left"].all_joints, *profile.arms["right"].all_joints])
    out = []
    for name, type_urn in viewer["input_types"].items():
        node, output = name.split("__", 1)
        kind = "Image" if type_urn.endswith("/Image") else type_urn.rsplit("/", 1)[-1]
        if kind == "Image":
            camera = renderer.cameras.get(output)
            if camera is None or not camera.enabled:
                continue
            hz = camera.rate_hz
        elif output == "diagnostics":
            hz = 1.0
        else:
            hz = rates.topic(f"{node}/{output}").rate_hz("sim")
        for i in range(int(seconds * hz)):
            t = T0 + int(i * 1e9 / hz)
            value, meta = make[kind](i, t)
            out.append((t, name, value, meta))
    out.sort(key=lambda m: m[0])
    return out


def run_once(config, msgs, out: Path) -> tuple[float, float, int, int]:
    profile = models.load_profile()
    mapper = ViewMapper(config, load_robot_binding(load_renderer_config(), profile), profile.base_frame)
    sink = RerunSink("teledora-bench")
    sink.save(out)
    sink.log_static(mapper.static_items())
    cpu0, wall0 = time.process_time(), time.perf_counter()
    for stamp, topic, value, meta in msgs:
        log_message(mapper, sink, topic, value, meta, stamp)
    sink.close()
    return time.process_time() - cpu0, time.perf_counter() - wall0, sum(mapper.counts.shown.values()), out.stat().st_size


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    shipped = load_viewer_config()
    configs = {"shipped rates": shipped,
               "every message": dataclasses.replace(shipped, rates_hz=ViewRates(0.0, 0.0, 0.0, 0.0, 0.0, 0.0))}
    msgs = messages(args.seconds)
    print(f"{len(msgs)} messages over {args.seconds:.0f} s of robot time ({len(msgs) / args.seconds:.0f} msg/s)")
    results: dict[str, list] = {k: [] for k in configs}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, config in configs.items():
                results[name].append(run_once(config, msgs, Path(tmp) / f"{r}-{len(results[name])}.rrd"))
    print(f"{'config':15} {'CPU s / robot s':>16} {'us / message':>13} {'shown':>7} {'MB / robot s':>13}   (median of {args.rounds})")
    for name, runs in results.items():
        cpu = statistics.median(r[0] for r in runs)
        print(f"{name:15} {cpu / args.seconds:16.3f} {cpu / len(msgs) * 1e6:13.0f} {runs[0][2]:7d}"
              f" {statistics.median(r[3] for r in runs) / 1e6 / args.seconds:13.2f}")
    a, b = (statistics.median(r[0] for r in results[k]) for k in configs)
    print(f"every message / shipped rates CPU: {b / a:.1f}x")


if __name__ == "__main__":
    main()
