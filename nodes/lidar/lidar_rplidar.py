"""lidar_front / lidar_back node (hardware): one RPLIDAR A1 over USB serial.

Inputs: ``tick`` (dora timer, e.g. ``dora/timer/millis/20``): each tick reads
whatever bytes the lidar has sent.
Outputs: ``scan`` (LaserScan in the lidar's frame, one per revolution, on the
1-degree grid of ``operators/lidar/scan_binning.py``), ``diagnostics`` (~1 Hz).

The device is :class:`teledora.devices.lidar.rplidar_a1.RplidarA1Backend`
(rplidar-roboticia with reads that time out). At start, and after any fault,
the node stops the lidar, waits, flushes the input buffer, checks health and
restarts the scan; a lidar that sends nothing for ``read_timeout_s`` raises
``LidarTimeoutError`` and is restarted, with a growing back-off.

Args: ``--lidar front|back`` (or env ``LIDAR``), ``--port`` (or env
``LIDAR_PORT``, overrides lidar.yaml), ``--config`` lidar YAML (default:
shipped), ``--no-power-up-delay`` (tests).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora.devices.lidar.rplidar_a1 import RECOVERABLE, RplidarA1Backend
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.models.config_files import load_lidar_setup


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="lidar_rplidar", description=__doc__.splitlines()[0])
    ap.add_argument("--lidar", default=os.environ.get("LIDAR", "front"), help="lidar name in lidar.yaml")
    ap.add_argument("--port", default=os.environ.get("LIDAR_PORT"), help="serial port (overrides lidar.yaml)")
    ap.add_argument("--config", type=Path, default=None, help="lidar YAML (default: shipped)")
    ap.add_argument("--no-power-up-delay", action="store_true", help="skip the staggered start delay")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns,
         sleep: Callable[[float], None] = time.sleep) -> None:
    args = parse_args(argv)
    setup = load_lidar_setup(args.config)
    if args.lidar not in setup.lidars:
        raise SystemExit(f"unknown lidar {args.lidar!r}; lidar.yaml has {sorted(setup.lidars)}")
    unit = setup.lidars[args.lidar]
    backend = RplidarA1Backend(args.port or unit.port, unit.frame_id, setup.grid, setup.hardware, clock, sleep)
    io = NodeIO(make_node(node), node_id(f"lidar_{args.lidar}"), clock)
    io.diag.set_status("warn", f"connecting to {backend.port}")
    if not args.no_power_up_delay:
        sleep(unit.power_up_delay_s)  # the two units must not spin up together on one hub
    connected, failures, retry_at = False, 0, 0

    def fault(exc: Exception) -> None:
        nonlocal connected, failures, retry_at
        failures += 1
        connected = False
        io.diag.error(f"{type(exc).__name__}: {exc}")
        io.diag.set_status("error", f"lidar fault ({failures} in a row), recovering")
        io.log("error", f"{backend.port}: {type(exc).__name__}: {exc}")
        backoff_s = min(0.2 * 2 ** min(failures, 5), 5.0)
        retry_at = clock() + int(backoff_s * 1e9)

    while (batch := io.next_batch()) is not None:
        for event in io.newest(batch, {"tick"}):
            if event["type"] != "INPUT" or event["id"] != "tick":
                continue  # STOP / INPUT_CLOSED: keep serving until the stream ends
            try:
                if not connected:
                    if clock() < retry_at:
                        continue
                    if backend.lidar is None or not backend.info or failures >= 3:
                        backend.close()  # reopen the port from scratch
                        backend.connect()
                    else:
                        backend.restart_scan("fault")
                    connected = True
                    io.log("info", f"{backend.port}: scanning, info {backend.info}, health {backend.health}")
                for scan in backend.read():
                    failures = 0
                    io.diag.set_status("ok" if backend.health == "good" else "warn", f"scanning, health {backend.health}")
                    io.send("scan", "LaserScan", scan.to_message())
            except RECOVERABLE as exc:
                fault(exc)
            io.diag.details = {**backend.diagnostics_details(), "consecutive_failures": failures}
            io.publish_diagnostics()
    backend.close()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
