"""ekf node (hardware): ArduPilot EKF3 fed with optical flow over MAVLink (pymavlink).

Inputs: ``flow`` (OpticalFlow from ``flow/flow``), ``gyro`` and ``odom`` (accepted for
parity with the onboard variant and ignored: the autopilot fuses its own IMU).
Outputs: ``pose`` (PoseEstimate, source "ardupilot", frame "odom"), ``diagnostics``.

The bridge (:mod:`teledora.devices.estimation.ardupilot_bridge`, over the device
:class:`teledora.devices.estimation.mavlink_link.ArduPilotLink`) connects over
serial or UDP, waits for the autopilot's heartbeat, makes
sure the EKF has an origin (SET_GPS_GLOBAL_ORIGIN when there is no GPS), requests
LOCAL_POSITION_NED, ATTITUDE and EKF_STATUS_REPORT streams, forwards each flow
report as OPTICAL_FLOW (``flow_rate_x/y``) plus DISTANCE_SENSOR (height), keeps a
TIMESYNC mapping of autopilot time onto the host clock, and publishes a pose per
LOCAL_POSITION_NED stamped on the host clock. A lost link (no heartbeat, I/O
error) is reopened without stopping the dataflow. docs/estimation.md lists the
ArduPilot parameters to set.

Args: ``--config`` estimation YAML (``ardupilot`` section), ``--connection`` overrides
it (``/dev/ttyACM0``, ``udpout:HOST:PORT``, ``udpin:0.0.0.0:14550``), ``--poll-s`` overrides
``ekf_node.mavlink_poll_s`` (how long it waits for an input before polling MAVLink).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora.devices.estimation.ardupilot_bridge import ArduPilotBridge
from teledora.devices.estimation.mavlink_link import ArduPilotLink
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.models.config_files import load_estimation_config, load_node_profile
from teledora.operators.estimation.autopilot_session import LinkState


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="ekf_ardupilot", description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=None, help="estimation YAML (default: shipped)")
    ap.add_argument("--connection", default=None, help="pymavlink connection string (overrides the YAML)")
    ap.add_argument("--poll-s", type=float, default=None, help="overrides ekf_node.mavlink_poll_s of the YAML")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    estimation = load_estimation_config(args.config)
    config = estimation.ardupilot
    poll_s = estimation.ekf_node.mavlink_poll_s if args.poll_s is None else args.poll_s
    if args.connection:
        config = replace(config, connection=args.connection)
    link = ArduPilotLink(config.connection, config.baud, config.source_system, config.source_component)
    bridge = ArduPilotBridge(config, link, load_node_profile().odom_frame, clock)
    io = NodeIO(make_node(node), node_id("ekf"), clock)
    last_state = bridge.session.state
    try:
        while (batch := io.next_batch(timeout_s=poll_s)) is not None:
            for event in batch:
                if event["type"] != "INPUT":
                    continue  # STOP / INPUT_CLOSED: keep bridging until the stream ends
                if event["id"] == "flow":
                    msg = io.decode(event, "OpticalFlow")
                    if msg is not None and not bridge.on_flow(msg):
                        io.diag.dropped += 1
                elif event["id"] in ("gyro", "odom"):
                    io.diag.received += 1  # the autopilot fuses its own IMU
                else:
                    io.reject(f"unknown input {event['id']!r}")
            for pose in bridge.poll():
                io.send("pose", "PoseEstimate", pose)
            state = bridge.session.state
            if state is not last_state:
                io.log("info" if state is LinkState.STREAMING else "warn",
                       f"autopilot link {last_state.value} -> {state.value} {bridge.session.last_loss_reason}")
                last_state = state
            io.diag.details.update(bridge.status())
            if bridge.last_error:
                io.diag.last_error = bridge.last_error
            io.diag.set_status("ok" if state is LinkState.STREAMING else "warn", f"link {state.value}")
            io.publish_diagnostics()
    finally:
        bridge.close()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
