"""flow node (sim): optical-flow and gyro reports from the simulator's ground truth.

Inputs: ``ground_truth`` (GroundTruth from ``sim/ground_truth``: body twist vx, vy, wz).
Outputs: ``flow`` (OpticalFlow, sensor axes, ArduPilot sign convention) at
``flow_sim.report_rate_hz`` on a grid of the ground truth's stamps, ``gyro``
(Gyro, base_link) on each ground-truth sample, ``diagnostics`` (~1 Hz).

Every ground-truth sample is used (the flow is averaged over the report interval,
as the real sensor integrates; an interval with no sample holds the last
twist). Reports are made on a grid of the ground truth's stamps, each stamped
with its grid time, not on a host timer: a node that runs late, or truth that
comes unevenly, still gives every report (operators/estimation/report_schedule.py). The
mounting offset, noise, gain error, quality, dropouts and report latency
(``delay_ms``: each report describes the motion that long before its stamp) come
from estimation.yaml (``flow_sensor`` and ``flow_sim`` sections).

With ``flow_image.enabled`` (or ``--image``) the flow is instead measured the way
the real sensor does it: the floor under the sensor is rendered from the
ground-truth pose at each report (a seeded texture; the pose interpolated between
the truth samples either side of the report's time) and the shift between frames
is found with OpenCV phase correlation; quality is the correlation peak.

Args: ``--config`` estimation YAML (default: shipped alohamini2/estimation.yaml),
``--seed`` noise seed override.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.estimation.delay_line import DelayLine
from teledora.operators.estimation.floor_image_flow import FloorCamera, ImageFlowSensor, pose_at
from teledora.operators.estimation.flow_model import FlowModel
from teledora.operators.estimation.flow_sensor_sim import FlowSensorSim, FlowSimConfigError
from teledora.operators.estimation.report_schedule import ReportSchedule
from teledora.models.config_files import load_estimation_config, load_node_profile


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="flow_sim", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="estimation YAML (default: shipped)")
    ap.add_argument("--seed", type=int, default=None, help="noise seed (overrides flow_sim.seed)")
    ap.add_argument("--image", action="store_true", help="measure flow from rendered floor images")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    cfg = load_estimation_config(args.config)
    base_frame = load_node_profile().base_frame
    sim_cfg = cfg.flow_sim
    if args.seed is not None:
        sim_cfg = dataclasses.replace(sim_cfg, seed=args.seed)
    flow_cfg = cfg.flow_sensor
    sensor = FlowSensorSim(FlowModel(flow_cfg), sim_cfg)
    imager: ImageFlowSensor | None = None
    if cfg.flow_image.enabled or args.image:
        imager = ImageFlowSensor(FloorCamera(cfg.flow_image.camera), flow_cfg.offset_m, flow_cfg.orient_yaw_rad)
    io = NodeIO(make_node(node), node_id("flow"), clock)
    io.diag.details["mode"] = "image" if imager else "model"
    reports = ReportSchedule(round(1e9 / sim_cfg.report_rate_hz))
    poses: DelayLine[tuple[float, float, float]] = DelayLine(round(sim_cfg.delay_ms * 1e6))  # image path

    def report(stamp_ns: int) -> None:
        """The report at grid time ``stamp_ns`` (ground truth up to it has arrived)."""
        r = sensor.read_flow(stamp_ns)
        msg = {"stamp_ns": r.stamp_ns, "frame_id": "flow_sensor", "flow_rate_x": r.flow_rate_x,
               "flow_rate_y": r.flow_rate_y, "quality": r.quality, "ground_distance_m": r.ground_distance_m,
               "integration_time_s": r.integration_time_s}
        if imager is not None:
            poses.release(stamp_ns)
            if poses.latest is None:
                return
            # the frame shows the floor where the base was ``delay`` before the grid time,
            # between the truth samples either side: truth slower or less even than the
            # reports still gives a frame, and a true shift, for every report
            seen_ns = stamp_ns - poses.delay_ns
            x, y, yaw = pose_at(seen_ns, poses.latest, poses.following())
            measured = imager.read(seen_ns, x, y, yaw)
            if measured is None:
                return  # the first frame: nothing to compare with yet
            fx, fy, quality, dt = measured
            msg.update(flow_rate_x=fx, flow_rate_y=fy, quality=quality, integration_time_s=dt)
        io.send("flow", "OpticalFlow", msg)
        io.diag.set_status("ok", "")

    while (batch := io.next_batch()) is not None:
        for event in batch:
            if event["type"] != "INPUT":
                continue  # STOP / INPUT_CLOSED: keep going until the stream ends
            if event["id"] != "ground_truth":
                io.reject(f"unknown input {event['id']!r}")
                continue
            msg = io.decode(event, "GroundTruth")
            if msg is None:
                continue
            truth_stamp_ns = msg["stamp_ns"]
            try:
                sensor.add_truth(truth_stamp_ns, msg["vx"], msg["vy"], msg["wz"])
            except FlowSimConfigError as exc:
                io.reject(f"ground_truth: {exc}")
                continue
            poses.push(truth_stamp_ns, (msg["x"], msg["y"], msg["yaw"]))
            io.send("gyro", "Gyro", {"stamp_ns": truth_stamp_ns, "frame_id": base_frame,
                                     "angular_velocity": sensor.read_gyro(msg["wz"])})
            if not sensor.ready(truth_stamp_ns):
                io.diag.set_status("warn", f"waiting for ground truth {sim_cfg.delay_ms:g} ms old (the report delay)")
                continue
            for grid_ns in reports.due(truth_stamp_ns):
                report(grid_ns)
        io.diag.details.update({"dropouts": sensor.dropouts, "seed": sim_cfg.seed, "delay_ms": sim_cfg.delay_ms,
                                "report_grid_restarts": reports.restarts})
        io.publish_diagnostics()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
