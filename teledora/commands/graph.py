"""`teledora graph`: the dataflow as a Mermaid diagram (from `dora graph`)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from teledora.operators.dataflow.mermaid_graph import replace_block, trim_mermaid


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("graph", help="print the dataflow graph as Mermaid, or refresh it in a doc")
    p.add_argument("dataflow", type=Path, nargs="?", default=Path("dataflows/sim.yml"))
    p.add_argument("--write", type=Path, default=None, help="replace the generated graph block in this Markdown file")
    p.set_defaults(func=_run)


def dataflow_mermaid(dataflow: Path) -> str:
    dora = Path(sys.executable).parent / "dora"
    out = subprocess.run([str(dora) if dora.exists() else "dora", "graph", "--mermaid", str(dataflow)],
                         capture_output=True, text=True, check=True, timeout=60)
    return trim_mermaid(out.stdout)


def _run(args: argparse.Namespace) -> int:
    mermaid = dataflow_mermaid(args.dataflow)
    if args.write is None:
        sys.stdout.write(mermaid)
        return 0
    args.write.write_text(replace_block(args.write.read_text(), mermaid))
    print(f"updated the graph in {args.write}")
    return 0
