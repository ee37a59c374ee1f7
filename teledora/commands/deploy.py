"""`teledora deploy split`: the sim dataflow spread over machines, derived from sim.yml."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from teledora.operators.dataflow.dataflow_deploy import distribute

# Device stand-ins run where the devices are; the operator's side on the workstation.
ROBOT_NODES = ("arms", "base", "lift", "sim", "lidar_front", "lidar_back", "scan_merger", "flow", "ekf")
HEADER = """\
# GENERATED from sim.yml by `teledora deploy split` -- do not edit; regenerate.
# The sim dataflow split over two machines like hardware.yml: device stand-ins
# ({robot}) on daemon `robot`, everything else on daemon `workstation`.
# tests/dataflows/test_distributed.py runs it on one host with a local
# coordinator and two daemons:
#   dora coordinator --port 6013 &
#   dora daemon --machine-id robot &
#   dora daemon --machine-id workstation --local-listen-port 53292 &
#   dora start dataflows/sim_distributed.yml --name am2-sim --detach
# Nodes start as `python -m teledora.nodes.<node>` from each daemon's PATH.
"""


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("deploy", help="derive multi-machine dataflows")
    sub = p.add_subparsers(dest="deploy_command", required=True)
    s = sub.add_parser("split", help="write sim.yml split over the robot and workstation machines")
    s.add_argument("dataflow", type=Path, nargs="?", default=Path("dataflows/sim.yml"))
    s.add_argument("-o", "--output", type=Path, default=Path("dataflows/sim_distributed.yml"))
    s.set_defaults(func=_split)


def split_text(dataflow_text: str) -> str:
    flow = yaml.safe_load(dataflow_text)
    placement = {n["id"]: ("robot" if n["id"] in ROBOT_NODES else "workstation") for n in flow["nodes"]}
    body = yaml.safe_dump(distribute(flow, placement), sort_keys=False, width=120)
    return HEADER.format(robot=", ".join(ROBOT_NODES)) + body


def _split(args: argparse.Namespace) -> int:
    args.output.write_text(split_text(args.dataflow.read_text()))
    print(f"wrote {args.output}")
    return 0
