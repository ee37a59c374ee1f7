"""`teledora demo` / `teledora run`: start a dataflow with `dora run`, recorded.

Both put this environment's Python first on PATH (dora starts `.py` nodes with
the `python` it finds there), give the recorder a fresh run directory, and
print where the recording went. `demo` runs the headless sim dataflow, which
ends by itself when the scripted operator finishes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

DEFAULT_DATAFLOW = Path("dataflows/sim.yml")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    for name, help_text in (("demo", "run the headless sim demo (scripted operator), recorded"), ("run", "run any dataflow with dora, recorded")):
        p = subparsers.add_parser(name, help=help_text)
        if name == "run":
            p.add_argument("dataflow", type=Path, help="dataflow YAML")
        p.add_argument("--runs-dir", type=Path, default=Path(os.environ.get("TELEDORA_RUNS_DIR", "runs")), help="where run directories go")
        p.add_argument("--stop-after", default=None, help="stop the dataflow after this long (e.g. 90s)")
        p.add_argument("--speed", type=float, default=None, help="sim real-time factor (default 1.0)")
        p.set_defaults(func=_run, demo=(name == "demo"))


def dora_environment(run_dir: Path, speed: float | None = None) -> dict[str, str]:
    """Environment for `dora run`: this Python first on PATH, the run dir, headless GL."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["TELEDORA_RUN_DIR"] = str(run_dir.resolve())
    env.setdefault("MUJOCO_GL", "egl")
    if speed is not None:
        env["TELEDORA_SIM_SPEED"] = str(speed)
    return env


def new_run_path(runs_dir: Path) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = runs_dir / stamp
    n = 1
    while path.exists():
        path = runs_dir / f"{stamp}-{n}"
        n += 1
    return path


def _run(args: argparse.Namespace) -> int:
    dataflow = DEFAULT_DATAFLOW if args.demo else args.dataflow
    if not dataflow.exists():
        print(f"teledora: dataflow {dataflow} not found (run from the repository root)", file=sys.stderr)
        return 2
    run_dir = new_run_path(args.runs_dir)
    env = dora_environment(run_dir, args.speed)
    dora = Path(sys.executable).parent / "dora"
    cmd = [str(dora) if dora.exists() else "dora", "run", str(dataflow)]
    stop_after = args.stop_after or ("300s" if args.demo else None)  # the demo ends by itself (~80 s unloaded)
    if stop_after:
        cmd += ["--stop-after", stop_after]
    print(f"teledora: {' '.join(cmd)}", flush=True)
    rc = subprocess.call(cmd, env=env)
    manifest = run_dir / "manifest.json"
    if manifest.exists():
        counts = json.loads(manifest.read_text()).get("topics", {})
        total = sum(int(v.get("count", v) if isinstance(v, dict) else v) for v in counts.values())
        print(f"teledora: recorded {total} messages on {len(counts)} topics")
    print(f"teledora: recording in {run_dir}")
    if manifest.exists():
        print(f"teledora: look at it with `teledora log info {run_dir}` and `teledora tracking {run_dir}`;"
              f" re-run the control nodes on it exactly with"
              f" `teledora replay {run_dir} --live teleop,ik,scan_merger --exact --speed 0`")
    if rc != 0:
        print(f"teledora: dora run exited with {rc}", file=sys.stderr)
    return rc
