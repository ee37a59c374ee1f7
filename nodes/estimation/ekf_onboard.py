"""ekf node (onboard): planar EKF fusing optical flow, gyro and optional wheel odometry.

Inputs: ``flow`` (OpticalFlow from ``flow/flow``), ``gyro`` (Gyro), optional ``odom``
(Odometry from ``base/odom``; its body twist is fused).
Outputs: ``pose`` (PoseEstimate, source "onboard", frame "odom"), ``diagnostics`` (~1 Hz).

Every measurement is fused in arrival order at its own ``stamp_ns`` (the filter
predicts forward to it; an older one is fused at the filter's time and counted
as late). A pose goes out after each flow or odometry message, and after a gyro
message when no pose has gone out for ``ekf_node.gyro_publish_period_s``
(estimation.yaml) of measurement time, so the pose keeps flowing while the flow sensor is silent.

Args: ``--config`` estimation YAML (default: shipped), ``--no-offset-model`` forget
the flow sensor's mounting offset (to reproduce the spin-in-place failure),
``--no-odom`` ignore ``odom`` even when it is wired.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.models.config_files import load_estimation_config, load_node_profile
from teledora.operators.estimation.flow_model import FlowModel
from teledora.operators.estimation.estimation_config import EstimationConfig
from teledora.operators.estimation.flow_odometry import FlowOdometry


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="ekf_onboard", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="estimation YAML (default: shipped)")
    ap.add_argument("--no-offset-model", action="store_true", help="ignore the flow sensor's planar offset")
    ap.add_argument("--no-odom", action="store_true", help="do not fuse base/odom")
    return ap.parse_args(argv)


def build_estimator(cfg: EstimationConfig, odom_frame: str, offset_model: bool = True) -> FlowOdometry:
    """The estimator from the estimation config, publishing in ``odom_frame``."""
    flow_cfg = cfg.flow_sensor if offset_model else cfg.flow_sensor.without_offset()
    return FlowOdometry(FlowModel(flow_cfg), cfg.ekf, odom_frame)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    config = load_estimation_config(args.config)
    odo = build_estimator(config, load_node_profile().odom_frame, offset_model=not args.no_offset_model)
    io = NodeIO(make_node(node), node_id("ekf"), clock)
    gyro_period_ns = int(config.ekf_node.gyro_publish_period_s * 1e9)
    last_pose_ns: int | None = None

    def publish() -> None:
        nonlocal last_pose_ns
        pose = odo.pose("onboard")
        if io.send("pose", "PoseEstimate", pose):
            last_pose_ns = pose["stamp_ns"]

    while (batch := io.next_batch()) is not None:
        for event in batch:
            if event["type"] != "INPUT":
                continue  # STOP / INPUT_CLOSED: keep fusing until the stream ends
            eid = event["id"]
            if eid == "flow":
                msg = io.decode(event, "OpticalFlow")
                if msg is None:
                    continue
                odo.on_flow(msg["stamp_ns"], (msg["flow_rate_x"], msg["flow_rate_y"]), msg["quality"],
                            msg["ground_distance_m"])
                publish()
            elif eid == "gyro":
                msg = io.decode(event, "Gyro")
                if msg is None:
                    continue
                odo.on_gyro(msg["stamp_ns"], msg["angular_velocity"])
                if last_pose_ns is None or (odo.ekf.stamp_ns or 0) - last_pose_ns >= gyro_period_ns:
                    publish()
            elif eid == "odom":
                msg = io.decode(event, "Odometry")
                if msg is None or args.no_odom:
                    continue
                odo.on_odom(msg["stamp_ns"], msg["vx"], msg["vy"], msg["wz"])
                publish()
            else:
                io.reject(f"unknown input {eid!r}")
        counters = odo.counters()
        io.diag.details.update(counters)
        if odo.last_skip_reason:
            io.diag.details["last_skip_reason"] = odo.last_skip_reason
        fused_flow = counters["fused"].get("flow", 0)
        io.diag.set_status("ok" if fused_flow else "warn", "" if fused_flow else "no flow fused yet")
        io.publish_diagnostics()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
