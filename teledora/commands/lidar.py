"""`teledora lidar`: bring-up check of one RPLIDAR A1 on the robot.

Opens the lidar named in lidar.yaml (or ``--port``) with the same driver the
hardware node uses, prints its model, firmware and health, then a line per
turn: scan rate, valid returns, and the nearest return with its direction in
the lidar frame (hold a hand in front of one unit to see which port it is
on). Exits 1 with the reason when the lidar cannot be opened, reports a
hardware error or goes silent.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Callable

import numpy as np


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("lidar", help="check one RPLIDAR A1 (info, health, a few turns)", description=__doc__)
    p.add_argument("--lidar", default="front", help="lidar name in lidar.yaml (front, back)")
    p.add_argument("--port", default=None, help="serial port (default: from lidar.yaml)")
    p.add_argument("--config", type=Path, default=None, help="lidar YAML (default: shipped)")
    p.add_argument("--turns", type=int, default=5, help="turns to read")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    from teledora.devices.lidar.rplidar_a1 import RECOVERABLE, RplidarA1Backend
    from teledora.models.config_files import load_lidar_setup

    setup = load_lidar_setup(args.config)
    if args.lidar not in setup.lidars:
        out(f"unknown lidar {args.lidar!r}; lidar.yaml has {sorted(setup.lidars)}")
        return 1
    unit = setup.lidars[args.lidar]
    backend = RplidarA1Backend(args.port or unit.port, unit.frame_id, setup.grid, setup.hardware)
    try:
        backend.connect()
        fw = backend.info.get("firmware", (0, 0))
        out(f"{backend.port}: model 0x{backend.info.get('model', 0):02x}, firmware {fw[0]}.{fw[1]:02d}, "
            f"hardware {backend.info.get('hardware')}, serial {backend.info.get('serialnumber')}, health {backend.health}")
        turns = 0
        deadline = time.monotonic() + 2.0 + args.turns * 1.0
        while turns < args.turns and time.monotonic() < deadline:
            for scan in backend.read():
                turns += 1
                valid = scan.valid_mask()
                line = f"turn {turns}: {1 / scan.scan_time:5.2f} Hz, {int(valid.sum())}/{len(scan)} valid"
                if valid.any():
                    i = int(np.argmin(np.where(valid, scan.ranges, np.inf)))
                    line += f", nearest {scan.ranges[i]:.3f} m at {math.degrees(scan.angles()[i]) % 360:5.1f} deg (CCW)"
                out(line)
        if turns < args.turns:
            out(f"only {turns} of {args.turns} turns arrived")
            return 1
        out(f"ok: {backend.parser.resync_bytes} bytes skipped resyncing, {backend.restarts} restarts")
        return 0
    except RECOVERABLE as exc:
        out(f"{backend.port}: {type(exc).__name__}: {exc}")
        return 1
    finally:
        backend.close()
