"""`teledora demo` / `teledora run`: start a dataflow with `dora run`, recorded.

Both put this environment's Python first on PATH (dora starts `.py` nodes with
the `python` it finds there), give the recorder a fresh run directory, and
print where the recording went. `demo` runs the headless sim dataflow, which
ends by itself when the scripted operator finishes.

``--script pick-place`` (demo only) plays the pick-and-place scenario instead
of the default demo script (models/alohamini2/pick_place_script.yaml, through
the scripted xr node's TELEDORA_XR_SCRIPT) and names its episodes' task.

``--view`` adds the Rerun ``viewer`` node (docs/viewing.md): the dataflow with
it is written to a temporary folder and started from there; the dataflow file
itself is left as it is.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

import yaml

from teledora.commands._dora_process import (DEFAULT_STARTUP_TIMEOUT_S, RECORDER_DIED_RC, RecorderGuard, recorder_node,
                                            run_dora)
from teledora.models.config_files import PICK_PLACE_SCRIPT
from teledora.runtime.library_backtraces import without_library_backtraces

DEFAULT_DATAFLOW = Path("dataflows/sim.yml")

#: `teledora demo --script NAME`: the operator script and the episodes' task text
#: (None: the dataflow's own). The default demo's script is the xr node's default.
DEMO_SCRIPTS: dict[str, tuple[str | None, str | None]] = {
    "demo": (None, None),
    "pick-place": (PICK_PLACE_SCRIPT, "move the red cube 20 cm along the stand and back (scripted pick and place)"),
}


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    for name, help_text in (("demo", "run the headless sim demo (scripted operator), recorded"), ("run", "run any dataflow with dora, recorded")):
        p = subparsers.add_parser(name, help=help_text)
        if name == "run":
            p.add_argument("dataflow", type=Path, help="dataflow YAML")
        else:
            p.add_argument("--script", choices=sorted(DEMO_SCRIPTS), default="demo",
                           help="operator script: the default demo, or the pick-and-place scenario (docs/datasets.md)")
        p.add_argument("--runs-dir", type=Path, default=Path(os.environ.get("TELEDORA_RUNS_DIR", "runs")), help="where run directories go")
        p.add_argument("--stop-after", default=None, help="stop the dataflow after this long (e.g. 90s)")
        p.add_argument("--speed", type=float, default=None, help="sim real-time factor (default 1.0)")
        p.add_argument("--view", action="store_true",
                       help="add the Rerun viewer node: a viewer window, or RUN/viewer.rrd without a display (docs/viewing.md)")
        add_startup_timeout(p)
        p.set_defaults(func=_run, demo=(name == "demo"))


def add_startup_timeout(p: argparse.ArgumentParser) -> None:
    p.add_argument("--startup-timeout-s", type=float, default=DEFAULT_STARTUP_TIMEOUT_S,
                   help="a dataflow dora has not started this long after `dora run` (every node connected) is "
                        f"stopped and started once more (default {DEFAULT_STARTUP_TIMEOUT_S:g})")


def dora_environment(run_dir: Path, speed: float | None = None) -> dict[str, str]:
    """Environment for `dora run`: this Python first on PATH, the run dir, headless GL,
    Rust library backtraces off (teledora/runtime/library_backtraces.py)."""
    env = dict(os.environ)
    bindir = str(Path(sys.executable).parent)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["TELEDORA_RUN_DIR"] = str(run_dir.resolve())
    env.setdefault("MUJOCO_GL", "egl")
    without_library_backtraces(env)
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
    script, task = DEMO_SCRIPTS[getattr(args, "script", "demo")]
    if script is not None:
        env["TELEDORA_XR_SCRIPT"] = script
    if task is not None:
        env["TELEDORA_EPISODE_TASK"] = task
    if getattr(args, "view", False):
        try:
            dataflow = add_viewer(dataflow)
        except (RuntimeError, ValueError) as exc:
            print(f"teledora: {exc}", file=sys.stderr)
            return 2
        print(f"teledora: with the viewer node: {dataflow}", flush=True)
    dora = Path(sys.executable).parent / "dora"
    cmd = [str(dora) if dora.exists() else "dora", "run", str(dataflow)]
    stop_after = args.stop_after or ("300s" if args.demo else None)  # the demo ends by itself (~80 s unloaded)
    if stop_after:
        cmd += ["--stop-after", stop_after]
    print(f"teledora: {' '.join(cmd)}", flush=True)
    recorder_id = recorder_node(dataflow)
    guard = None if recorder_id is None else RecorderGuard(recorder_id, str(run_dir), str(dataflow.resolve().parent / "out"))
    try:
        rc = run_dora(cmd, env, startup_timeout_s=args.startup_timeout_s, recorder=guard)
    except KeyboardInterrupt:  # the user stopped it, and dora with it: say where the recording went
        rc = 130
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
    if getattr(args, "view", False) and (run_dir / "viewer.rrd").exists():
        print(f"teledora: live view saved in {run_dir / 'viewer.rrd'} (`rerun {run_dir / 'viewer.rrd'}`)")
    if manifest.exists():
        print(f"teledora: see it in Rerun with `teledora view {run_dir}`")
    if rc == RECORDER_DIED_RC and guard is not None:
        print(f"teledora: the run was stopped because its recorder died (exit status {rc})", file=sys.stderr)
    elif rc != 0:
        print(f"teledora: dora run exited with {rc}", file=sys.stderr)
    return rc


def add_viewer(dataflow: Path, out_dir: Path | None = None) -> Path:
    """Writes ``dataflow`` with the viewer node added (to ``out_dir``, default a
    new temporary folder) and returns the new file.

    Raises:
        RuntimeError: rerun-sdk is not installed (the message says how to install it).
        ValueError: the dataflow cannot take the viewer.
    """
    from teledora.devices.viewing.rerun_sink import require_rerun
    from teledora.operators.dataflow.viewer_node import with_viewer

    require_rerun()
    source = dataflow.resolve()
    parsed = yaml.safe_load(source.read_text())
    viewer_file = source.parent.parent / "nodes" / "viewing" / "viewer.py"
    uses_modules = all(n.get("path") == "python" for n in parsed.get("nodes", []))
    augmented = with_viewer(parsed, str(source.parent), None if uses_modules or not viewer_file.exists() else str(viewer_file))
    out_dir = out_dir or Path(tempfile.mkdtemp(prefix="teledora-view-"))
    out = out_dir / f"{source.stem}.view.yml"
    types = source.parent / "types"  # dora finds the message types next to the dataflow file
    if types.is_dir() and not (out_dir / "types").exists():
        (out_dir / "types").symlink_to(types, target_is_directory=True)
    out.write_text(f"# {source.name} with the viewer node added (teledora --view); generated, do not edit\n"
                   + yaml.safe_dump(augmented, sort_keys=False))
    return out
