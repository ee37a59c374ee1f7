"""`teledora demo` / `teledora run`: start a dataflow with `dora run`, recorded.

Both put this environment's Python first on PATH (dora starts `.py` nodes with
the `python` it finds there), give the recorder a fresh run directory, and
print where the recording went. `demo` runs the headless sim dataflow, which
ends by itself when the scripted operator finishes.

``--script pick-place`` (demo only) plays the pick-and-place scenario instead
of the default demo script (models/alohamini2/pick_place_script.yaml, through
the scripted xr node's TELEDORA_XR_SCRIPT) and names its episodes' task.

``--seed S`` (with ``--script pick-place``) plays the randomised pick and
place instead (models/alohamini2/pick_place_random.yaml): the seed places
the cube and draws ``--episodes N`` targets; the sim and the scripted xr node
get both through TELEDORA_PICK_PLACE_SEED / TELEDORA_PICK_PLACE_EPISODES.

``--policy DIR`` runs dataflows/sim_policy.yml instead: the policy node with
that checkpoint beside the scripted operator, which keeps authority. With
``--script pick-place --seed S`` the operator drives to the stand, hands the
robot to the policy with the X+A hold and then only marks the seeded episodes
(operators/policy/handback_script.py; its script is written into the run as
``operator_script.yaml``), so the episodes are the policy's.

``--view`` adds the Rerun ``viewer`` node (docs/viewing.md): the dataflow with
it is written to a temporary folder and started from there, and the folder is
removed when the run ends (dora's node logs from it move into the run, as
``dora_logs/``); the dataflow file itself is left as it is.

The console shows one line per node started, problems, a status line and the
closing lines; all of dora's output goes to ``RUN/dora.log``, and to the
console too with ``--verbose`` (teledora/commands/_run_console.py). The
pick-and-place scenario ends by saying how far the cube moved and how many
episodes were kept, read from the recording.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import yaml

from teledora.commands._dora_process import (DEFAULT_STARTUP_TIMEOUT_S, RECORDER_DIED_RC, RecorderGuard, recorder_node,
                                            run_dora)
from teledora.commands._run_console import LOG_NAME, RunConsole
from teledora.commands.view import rerun_command
from teledora.models.config_files import PICK_PLACE_SCRIPT
from teledora.operators.sim.pick_place_layout import EPISODES_ENV, SEED_ENV
from teledora.runtime.library_backtraces import without_library_backtraces

DEFAULT_DATAFLOW = Path("dataflows/sim.yml")
POLICY_DATAFLOW = Path("dataflows/sim_policy.yml")
OPERATOR_SCRIPT_FILE = "operator_script.yaml"  # a policy run's operator script, in the run
DORA_LOGS = "dora_logs"  # a --view run's dora node logs, moved into the run from the temporary dataflow's folder
PICK_PLACE_OBJECT = "cube_red"  # the object the pick-and-place script moves

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
            p.add_argument("--seed", type=int, default=None,
                           help="pick-place only: place the cube and its targets at random from this seed (>= 0)")
            p.add_argument("--episodes", type=int, default=None,
                           help="pick-place with --seed: this many pick-and-place episodes, one after another (default 1)")
            p.add_argument("--policy", type=Path, default=None, metavar="DIR",
                           help="run the policy checkpoint DIR beside the scripted operator (dataflows/sim_policy.yml, "
                                "docs/policy.md); with --seed the operator hands it the robot for the episodes")
        p.add_argument("--runs-dir", type=Path, default=Path(os.environ.get("TELEDORA_RUNS_DIR", "runs")), help="where run directories go")
        p.add_argument("--stop-after", default=None, help="stop the dataflow after this long (e.g. 90s)")
        p.add_argument("--speed", type=float, default=None, help="sim real-time factor (default 1.0)")
        p.add_argument("--view", action="store_true",
                       help="add the Rerun viewer node: a viewer window, or RUN/viewer.rrd without a display (docs/viewing.md)")
        p.add_argument("--verbose", action="store_true",
                       help="show all of dora's output as it comes (it always goes to RUN/dora.log)")
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
    policy = getattr(args, "policy", None)
    dataflow = (POLICY_DATAFLOW if policy is not None else DEFAULT_DATAFLOW) if args.demo else args.dataflow
    if policy is not None and not policy.is_dir():
        print(f"teledora: --policy {policy}: not a checkpoint directory", file=sys.stderr)
        return 2
    if not dataflow.exists():
        print(f"teledora: dataflow {dataflow} not found (run from the repository root)", file=sys.stderr)
        return 2
    script_name = getattr(args, "script", "demo")
    seed, episodes = getattr(args, "seed", None), getattr(args, "episodes", None)
    if (seed is not None or episodes is not None) and script_name != "pick-place":
        print("teledora: --seed and --episodes go with --script pick-place", file=sys.stderr)
        return 2
    if episodes is not None and seed is None:
        print("teledora: --episodes needs --seed (the fixed pick and place has its own two episodes)", file=sys.stderr)
        return 2
    if (seed is not None and seed < 0) or (episodes is not None and episodes < 1):
        print("teledora: --seed must be >= 0 and --episodes >= 1", file=sys.stderr)
        return 2
    run_dir = getattr(args, "run_dir", None) or new_run_path(args.runs_dir)
    env = dora_environment(run_dir, args.speed)
    script, task = DEMO_SCRIPTS[script_name]
    if seed is not None:
        env[SEED_ENV], env[EPISODES_ENV] = str(seed), str(episodes or 1)
        task = f"pick the red cube and set it down at the seeded target (seed {seed}, scripted pick and place)"
    if script is not None:
        env["TELEDORA_XR_SCRIPT"] = script
    if task is not None:
        env["TELEDORA_EPISODE_TASK"] = task
    if policy is not None:
        env["TELEDORA_POLICY_CHECKPOINT"] = str(policy.resolve())
        if seed is not None:
            env["TELEDORA_XR_SCRIPT"] = str(write_handback_script(run_dir, seed, episodes or 1))
    view_dir: Path | None = None
    if getattr(args, "view", False):
        try:
            view_dir = Path(tempfile.mkdtemp(prefix="teledora-view-"))
            dataflow = add_viewer(dataflow, view_dir)
        except (RuntimeError, ValueError) as exc:
            print(f"teledora: {exc}", file=sys.stderr)
            if view_dir is not None:
                shutil.rmtree(view_dir, ignore_errors=True)
            return 2
    try:
        return _run_dataflow(args, dataflow, run_dir, env, script_name, view_dir)
    finally:
        if view_dir is not None:  # the generated dataflow; dora's node logs in it go with the run
            if (view_dir / "out").is_dir():
                shutil.move(str(view_dir / "out"), str(run_dir / DORA_LOGS))
            shutil.rmtree(view_dir, ignore_errors=True)


def _run_dataflow(args: argparse.Namespace, dataflow: Path, run_dir: Path, env: dict[str, str], script_name: str,
                  view_dir: Path | None) -> int:
    dora = Path(sys.executable).parent / "dora"
    cmd = [str(dora) if dora.exists() else "dora", "run", str(dataflow)]
    # the demo ends by itself (~80 s unloaded); a seeded pick and place adds ~18 s an episode
    seeded_episodes = (getattr(args, "episodes", None) or 1) if getattr(args, "seed", None) is not None else 0
    stop_after = args.stop_after or (f"{300 + 40 * seeded_episodes}s" if args.demo else None)
    if stop_after:
        cmd += ["--stop-after", stop_after]
    with_viewer = " (with the viewer node added)" if view_dir is not None else ""
    print(f"teledora: {' '.join(cmd)}{with_viewer}", flush=True)
    recorder_id = recorder_node(dataflow)
    logs_dir = run_dir / DORA_LOGS if view_dir is not None else dataflow.resolve().parent / "out"
    guard = None if recorder_id is None else RecorderGuard(recorder_id, str(run_dir), str(logs_dir))
    console = RunConsole(sys.stdout, run_dir / LOG_NAME, run_dir, verbose=args.verbose).start()
    try:
        rc = run_dora(cmd, env, startup_timeout_s=args.startup_timeout_s, recorder=guard, out=console, say=console.say)
    except KeyboardInterrupt:  # the user stopped it, and dora with it: say where the recording went
        rc = 130
    counts_lines = console.close()
    for line in closing_lines(run_dir, console, script_name if args.demo else None, view_dir is not None):
        print(f"teledora: {line}")
    for line in counts_lines:
        print(f"teledora: {line}")
    if rc == RECORDER_DIED_RC and guard is not None:
        print(f"teledora: the run was stopped because its recorder died (exit status {rc})", file=sys.stderr)
    elif rc != 0:
        print(f"teledora: dora run exited with {rc}", file=sys.stderr)
    sys.stdout.flush()
    return rc


def _disk_mb(run_dir: Path) -> float:
    return sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file()) / 1e6


def closing_lines(run_dir: Path, console: RunConsole, script: str | None, view: bool) -> list[str]:
    """Where the recording went, how much it holds, what to do with it next."""
    manifest = run_dir / "manifest.json"
    if not manifest.exists():
        return [f"recording in {run_dir} (nothing recorded)"]
    counts = json.loads(manifest.read_text()).get("topics", {})
    total = sum(int(v.get("count", v) if isinstance(v, dict) else v) for v in counts.values())
    lines = [f"recorded {total:,} messages on {len(counts)} topics; recording in {run_dir} ({_disk_mb(run_dir):,.0f} MB)"]
    if script == "pick-place":
        lines += pick_place_outcome(run_dir)
    lines.append(f"look at it: `teledora log info {run_dir}`, `teledora tracking {run_dir}`; "
                 f"in Rerun: `teledora view {run_dir}`")
    if view and (run_dir / "viewer.rrd").exists():
        lines.append(f"live view saved: `{rerun_command()} {run_dir / 'viewer.rrd'}`")
    lines.append(f"re-run its control nodes exactly: `teledora replay {run_dir} --live teleop,ik,scan_merger --exact --speed 0`")
    return lines


def pick_place_outcome(run_dir: Path) -> list[str]:
    """The pick and place's outcome from the recording: how far the cube went
    (its true poses, sim/objects), the episodes kept, and the export command."""
    from teledora.operators.contract.messages import MessageError, decode
    from teledora.operators.datasets.episodes import split_episodes
    from teledora.operators.datasets.scenario_outcome import object_travel
    from teledora.recording.lerobot_export import episode_marks
    from teledora.recording.run_reader import RunReader

    try:
        reader = RunReader(run_dir)
        poses = [decode("ObjectPoses", rec.value) for rec in reader.iter_topic("sim__objects")] \
            if "sim__objects" in reader.topics else []
        marks = episode_marks(reader)
    except (OSError, ValueError, MessageError) as exc:
        return [f"pick-place: the outcome cannot be read from the recording ({exc})"]
    travel = object_travel(poses, PICK_PLACE_OBJECT)
    moved = f"pick-place: {travel.sentence()}" if travel else f"pick-place: no pose of {PICK_PLACE_OBJECT} was recorded"
    split = split_episodes(marks, 0, 2**62, "")  # episodes still open at the end count as kept
    kept = len(split.episodes) if marks else 0
    return [f"{moved}; {kept} episode(s) kept, {len(split.discarded)} discarded",
            f"next: the dataset: `teledora log export {run_dir} --format lerobot -o datasets/pick_place`"]


def write_handback_script(run_dir: Path, seed: int, episodes: int) -> Path:
    """Writes the policy run's operator script for the seeded episodes into the run."""
    from teledora.models.config_files import load_demo_script, load_pick_place_random
    from teledora.operators.policy.handback_script import handback_script, script_mapping
    from teledora.operators.sim.pick_place_layout import placements, randomised_script

    layout = load_pick_place_random()
    script = handback_script(randomised_script(layout, load_demo_script(layout.script), placements(layout, seed, episodes)))
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / OPERATOR_SCRIPT_FILE
    path.write_text(yaml.safe_dump(script_mapping(script), sort_keys=False))
    return path.resolve()


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
    out_dir = out_dir or Path(tempfile.mkdtemp(prefix="teledora-view-"))  # the caller removes it
    out = out_dir / f"{source.stem}.view.yml"
    types = source.parent / "types"  # dora finds the message types next to the dataflow file
    if types.is_dir() and not (out_dir / "types").exists():
        (out_dir / "types").symlink_to(types, target_is_directory=True)
    out.write_text(f"# {source.name} with the viewer node added (teledora --view); generated, do not edit\n"
                   + yaml.safe_dump(augmented, sort_keys=False))
    return out
