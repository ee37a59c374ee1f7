"""`teledora contract`: the message contract as dora type annotations."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from teledora.operators.contract.dataflow_types import render_types_yaml

DEFAULT_TYPES_FILE = Path("dataflows/types/teledora/msgs/v1.yml")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("contract", help="message contract tools")
    sub = p.add_subparsers(dest="contract_command", required=True)
    t = sub.add_parser("types", help="write the dora user-type file generated from the contract")
    t.add_argument("-o", "--output", type=Path, default=DEFAULT_TYPES_FILE, help="file to write ('-' for stdout)")
    t.set_defaults(func=_types)


def _types(args: argparse.Namespace) -> int:
    text = render_types_yaml()
    if str(args.output) == "-":
        sys.stdout.write(text)
        return 0
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return 0
