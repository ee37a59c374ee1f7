"""lidar_front / lidar_back node (hardware): one RPLIDAR A1 over USB serial.

Inputs: ``tick`` (dora timer, e.g. ``dora/timer/millis/20``): each tick reads
whatever bytes the lidar has sent.
Outputs: ``scan`` (LaserScan in the lidar's frame, one per revolution, on the
1-degree grid of ``operators/lidar/scan_binning.py``), ``diagnostics`` (~1 Hz).

The device is :class:`teledora.devices.lidar.rplidar_a1.RplidarA1Backend`
(rplidar-roboticia with reads that time out). When to connect, restart the
scan or give up is :class:`teledora.operators.lidar.restart_policy.RestartPolicy`:
every connect waits the unit's ``power_up_delay_s``; a fault (timeout, no turn
for ``revolution_timeout_s``, protocol or serial error) is reported and retried
with a growing back-off; after ``hardware.max_restarts`` failed attempts in a
row the node closes the port and stays in error until it is restarted.
Every scan passes :class:`teledora.operators.lidar.outlier_filter.OutlierFilter`
first (lidar.yaml ``outlier_filter``): the isolated range outliers it sets to
NaN are counted (details ``outliers_rejected``) and make the period's
diagnostics ``warn``.

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
from teledora.operators.lidar.outlier_filter import OutlierFilter
from teledora.operators.lidar.restart_policy import CONNECT, RestartPolicy
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
    delay_s = 0.0 if args.no_power_up_delay else unit.power_up_delay_s
    policy = RestartPolicy(setup.hardware.max_restarts, delay_s)
    policy.start(clock())
    io.diag.set_status("warn", f"waiting power_up_delay_s {delay_s} s, then connecting to {backend.port}")
    scanning = False
    outliers = OutlierFilter(setup.outlier_filter) if setup.outlier_filter is not None else None

    def details() -> dict[str, Any]:
        return {**backend.diagnostics_details(), "consecutive_failures": policy.failures, "gave_up": policy.gave_up,
                "outliers_rejected": outliers.rays_rejected if outliers is not None else None}

    def flag_outliers() -> None:
        # real rays are dropped too (a thin object seen for the first time): a warning, not a fault
        new, last = outliers.report() if outliers is not None else (0, "")
        if new and io.diag.level == "ok":
            io.diag.set_status("warn", f"{new} range outlier(s) set to NaN since the last report (last: {last})")

    def fault(exc: Exception) -> None:
        nonlocal scanning
        scanning = False
        if outliers is not None:
            outliers.reset()  # the turn after a restart has no previous turn to be judged against
        reason = f"{type(exc).__name__}: {exc}"
        io.diag.error(reason)
        io.log("error", f"{backend.port}: {reason}")
        if policy.fault(clock(), port_lost=backend.lidar is None or not backend.info or isinstance(exc, OSError)) is None:
            backend.close()  # stops the motor
            io.diag.set_status("error", f"gave up after {policy.max_restarts} restarts in a row without a scan "
                                        f"(hardware.max_restarts); last: {reason}; restart the node")
            io.log("error", f"{backend.port}: restart budget spent, staying in error")
        else:
            io.diag.set_status("error", f"lidar fault ({policy.failures} in a row, budget {policy.max_restarts}), "
                                        f"recovering in {policy.backoff_s():.1f} s: {reason}")
        io.diag.details = details()
        io.publish_diagnostics(force=True)  # every fault is seen, however short the recovery

    while (batch := io.next_batch()) is not None:
        for event in io.newest(batch, {"tick"}):
            if event["type"] != "INPUT" or event["id"] != "tick":
                continue  # STOP / INPUT_CLOSED: keep serving until the stream ends
            try:
                action = policy.due(clock())
                if action is not None:
                    if action == CONNECT:
                        backend.close()  # reopen the port from scratch
                        backend.connect()
                    else:
                        backend.restart_scan("fault")
                    scanning = True
                    if policy.failures:  # still in error until a turn proves the fault gone
                        io.diag.set_status("error", f"restarted after {policy.failures} faults in a row, waiting for a "
                                                    f"complete turn; last: {io.diag.last_error}")
                    else:
                        io.diag.set_status("warn", f"connected to {backend.port}, waiting for the first complete turn")
                    io.log("info", f"{backend.port}: scanning, info {backend.info}, health {backend.health}")
                if scanning:
                    for scan in backend.read():
                        policy.turn_completed()
                        io.diag.set_status("ok" if backend.health == "good" else "warn",
                                           f"scanning at {1.0 / scan.scan_time:.1f} Hz, health {backend.health}")
                        if outliers is not None:
                            scan = outliers.apply(scan).scan
                        io.send("scan", "LaserScan", scan.to_message())
            except RECOVERABLE as exc:
                fault(exc)
            io.diag.details = details()
            io.publish_diagnostics(refresh=flag_outliers)
    backend.close()
    io.publish_diagnostics(force=True, refresh=flag_outliers)


if __name__ == "__main__":
    main()
