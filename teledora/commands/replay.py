"""`teledora replay RUN`: re-run a recorded dataflow with some nodes replayed.

The dataflow stored in the run's manifest is rewritten: each replaced node
keeps its id and outputs but becomes a ``replayer`` that sends the recorded
messages; every other node runs live, and a recorder in the graph records the
replay into a new run directory (its manifest names the run it replays).
Inputs fed by a replayer get ``queue_policy: backpressure`` and a large
``queue_size`` (dora 1.1.0 drops the oldest message past max(queue_size, 100)
even under backpressure) so that nothing is dropped, even at ``--speed 0``. When every replayer has finished, the dataflow
is stopped (Ctrl-C style) once the replay's recorder has stored every replayed
message, and the new run directory is printed.

``--exact`` reproduces the live nodes' outputs byte for byte: each live node
that recorded an input journal (teleop, scan_merger) follows it, getting
its recorded batches and clock values (``TELEDORA_FOLLOW_JOURNAL``), every
input of such a node is lossless, and stamps are replayed unchanged. The
dataflow stops once every replayer and every follower is done. A run recorded
with a node that no longer exists (``ik``, whose IK now runs inside
``teledora.nodes.teleop.teleop``) is refused by ``--exact``; without it, such a
run replays on today's graph given with ``--dataflow``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from teledora.commands.demo import add_startup_timeout, dora_environment
from teledora.commands._dora_process import DEFAULT_STARTUP_TIMEOUT_S, run_dora
from teledora.commands._run_console import LOG_NAME, RunConsole
from teledora.recording.journal_files import JOURNAL_OUTPUT
from teledora.operators.recording.input_journal import JournalError
from teledora.recording import MANIFEST_NAME, RunFormatError, RunReader, new_run_dir
from teledora.recording.replay_plan import ReplayPlanError, build_replay_dataflow, expected_counts, follower_counts, source_nodes
from teledora.recording.topic_aliases import RETIRED_NODES

REPLAY_YAML = "replay.yml"
_DONE = re.compile(r"(?:replay|journal) (\S+) done:")


# what each replayed or journal-following node says when it has finished: shown on the quiet console
_OUTCOME = re.compile(r"^(?:replay|journal) \S+ done:")


def _module_file(module: str) -> Path:
    """The source file of a node module, found without importing the node."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None:
        raise ReplayPlanError(f"node module {module} is not installed")
    return Path(spec.origin).resolve()


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("replay", help="re-run a recording: replayed nodes stand in for recorded ones")
    p.add_argument("run", type=Path, help="run directory (runs/<YYYYmmdd-HHMMSS>)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--replace", default=None, help="comma-separated node ids to replay (default: the source nodes)")
    which.add_argument("--live", default=None, help="comma-separated node ids to run live; every other recorded node is replayed")
    p.add_argument("--speed", type=float, default=1.0, help="1.0 original timing, 0 as fast as possible (default 1.0)")
    p.add_argument(
        "--stamps",
        choices=["shifted", "recorded"],
        default=None,
        help="shifted (default): replayed stamp_ns fields move to replay time so live nodes see fresh data; "
        "recorded (default with --exact): replay the recorded bytes unchanged",
    )
    p.add_argument("--exact", action="store_true",
                   help="live nodes with a recorded input journal follow it: their outputs come out byte-equal "
                        "(alone: the journaled nodes run live, every other node is replayed)")
    p.add_argument("--loop", action="store_true", help="replay again from the start until stopped")
    p.add_argument("--dataflow", type=Path, default=None, help="dataflow YAML to use instead of the recorded one")
    p.add_argument("--runs-dir", type=Path, default=None, help="where the replay's own run goes (default: beside RUN)")
    p.add_argument("--stop-after", default=None, help="stop the dataflow after this long anyway (e.g. 120s)")
    p.add_argument("--grace-s", type=float, default=2.0, help="how long live nodes may finish after the replay ends")
    p.add_argument("--queue-size", type=int, default=1000, help="least queue_size of inputs fed by replayers (default 1000)")
    p.add_argument("--dry-run", action="store_true", help="print the replay dataflow and exit")
    p.add_argument("--verbose", action="store_true", help="show dora's whole output (it always goes to the run's dora.log)")
    add_startup_timeout(p)
    p.set_defaults(func=_run)


@dataclass(frozen=True)
class ReplayPlan:
    """A replay dataflow and what it does."""

    dataflow: dict[str, Any]
    replace: list[str]  # nodes replayed from the run
    follow: list[str]  # live nodes that follow their recorded journal
    warnings: list[str]


def plan_from_run(args: argparse.Namespace) -> ReplayPlan:
    """The replay for the command's arguments."""
    reader = RunReader(args.run)
    run_dir = args.run.resolve()
    if args.dataflow is not None:
        text = args.dataflow.read_text()
        dataflow_dir = args.dataflow.resolve().parent
    else:
        text = reader.manifest.get("dataflow_yaml")
        if not text:
            raise ReplayPlanError(f"{args.run} has no dataflow in its manifest: pass --dataflow FILE")
        dataflow_dir = Path(reader.manifest.get("dataflow_dir") or ".")
    dataflow = yaml.safe_load(text)
    recorded: dict[str, set[str]] = {}
    for node, output in reader.sources().values():
        recorded.setdefault(node, set()).add(output)
    retired = sorted(n for n in recorded if n in RETIRED_NODES)
    if retired:
        why = "; ".join(f"{n!r}: {RETIRED_NODES[n]}" for n in retired)
        if args.exact:
            raise ReplayPlanError(
                f"--exact: {args.run} was recorded with node(s) that no longer exist ({why}); today's nodes cannot "
                "follow its input journals byte for byte. Replay it without --exact on today's graph: "
                "--dataflow dataflows/sim.yml (or hardware.yml) --replace NODES")
        if args.dataflow is None:
            raise ReplayPlanError(f"{args.run} was recorded with node(s) that no longer exist ({why}): "
                                  "pass --dataflow FILE to replay it on today's graph")
    recorders = {e.get("id") for e in dataflow.get("nodes", []) if str(e.get("path", "")).endswith("recorder.py")}
    live: list[str] = []
    if args.exact and not args.live and not args.replace:
        # exact by default: the journaled nodes run live, everything else is replayed
        journaled = [n for n, outputs in recorded.items() if JOURNAL_OUTPUT in outputs]
        if not journaled:
            raise ReplayPlanError("--exact: the run holds no input journal (it was recorded before journals, or without them)")
        args.live = ",".join(journaled)
    if args.live:
        live = [n.strip() for n in args.live.split(",") if n.strip()]
        known = {e.get("id") for e in dataflow.get("nodes", [])}
        for node in live:
            if node not in known:
                raise ReplayPlanError(f"node {node!r} is not in the recorded dataflow (nodes: {', '.join(sorted(known))})")
        replace = [e["id"] for e in dataflow.get("nodes", [])
                   if e.get("id") not in live and e.get("id") not in recorders and recorded.get(e.get("id"))]
    elif args.replace:
        replace = [n.strip() for n in args.replace.split(",") if n.strip()]
    else:
        replace = [n for n in source_nodes(dataflow) if recorded.get(n)]
        if not replace:
            raise ReplayPlanError("no recorded source node to replay by default: name nodes with --replace")
    follow: list[str] = []
    warnings: list[str] = []
    if args.exact:
        for entry in dataflow.get("nodes", []):
            nid = entry.get("id")
            if nid in replace or nid in recorders:
                continue
            if JOURNAL_OUTPUT in recorded.get(nid, set()):
                follow.append(nid)
            else:
                warnings.append(f"{nid} runs live without a recorded journal: its outputs can differ from the recording")
    counts = {f"{node}/{output}": reader.read_topic(topic).table.num_rows for topic, (node, output) in reader.sources().items()}
    plan, plan_warnings = build_replay_dataflow(
        dataflow,
        recorded,
        replace,
        run_dir=run_dir,
        dataflow_dir=dataflow_dir,
        replayer_path=_module_file("teledora.nodes.recording.replayer"),
        speed=args.speed,
        loop=args.loop,
        queue_size=args.queue_size,
        stamps=args.stamps,
        follow=follow,
        topic_counts=counts,
    )
    return ReplayPlan(plan, replace, follow, warnings + plan_warnings)


def plan_dataflow_dir(args: argparse.Namespace) -> Path:
    """Directory the recorded (or given) dataflow's relative names start from."""
    if args.dataflow is not None:
        return args.dataflow.resolve().parent
    return Path(RunReader(args.run).manifest.get("dataflow_dir") or ".")


def _link_type_annotations(dataflow_dir: Path, out_dir: Path) -> None:
    """dora looks up ``output_types`` in ``types/`` beside the YAML: point the
    replay's ``types`` there so the annotations still resolve."""
    types = dataflow_dir / "types"
    link = out_dir / "types"
    if types.is_dir() and not link.exists():
        try:
            link.symlink_to(types.resolve(), target_is_directory=True)
        except OSError:
            pass


def dora_command(yaml_path: Path, stop_after: str | None) -> list[str]:
    dora = Path(sys.executable).parent / "dora"
    cmd = [str(dora) if dora.exists() else "dora", "run", str(yaml_path)]
    if stop_after:
        cmd += ["--stop-after", stop_after]
    return cmd


def recorded_counts(run_dir: Path) -> dict[str, int]:
    """Flushed per-topic counts of a run being recorded (empty until it starts)."""
    try:
        topics = json.loads((run_dir / MANIFEST_NAME).read_text()).get("topics", {})
    except (OSError, json.JSONDecodeError):
        return {}
    return {t: int(v.get("count", 0)) for t, v in topics.items()}


def _stop_when_recorded(proc: subprocess.Popen, out_dir: Path, expect: dict[str, int], grace_s: float, wait_s: float) -> None:
    deadline = time.monotonic() + wait_s
    while proc.poll() is None and time.monotonic() < deadline:
        have = recorded_counts(out_dir)
        if all(have.get(t, 0) >= n for t, n in expect.items()):
            break
        time.sleep(0.2)
    time.sleep(grace_s)
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)


def run_until_replayed(
    cmd: list[str],
    env: dict[str, str],
    replayers: set[str],
    grace_s: float,
    out_dir: Path | None = None,
    expect: dict[str, int] | None = None,
    wait_s: float = 120.0,
    startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
    console: RunConsole | None = None,
) -> int:
    """Runs ``dora run``, echoing its output (started again when dora does not
    start the dataflow in time: :mod:`teledora.commands._dora_process`). Once
    every replayer has said it is done, waits until the replay's recorder has
    flushed ``expect`` (topic -> count; at most ``wait_s``), then ``grace_s``
    for the live nodes, then stops the dataflow with SIGINT. With ``console``,
    dora's output goes through it (quiet, logged) instead of to stdout."""
    pending = set(replayers)
    stopper: list[threading.Thread] = []

    def on_line(line: str, proc: subprocess.Popen) -> None:
        match = _DONE.search(line)
        if match and match.group(1) in pending:
            pending.discard(match.group(1))
            if not pending and not stopper:
                args = (proc, out_dir or Path("."), expect or {}, grace_s, wait_s)
                stopper.append(threading.Thread(target=_stop_when_recorded, args=args, daemon=True))
                stopper[0].start()

    try:
        if console is None:
            rc = run_dora(cmd, env, on_line, startup_timeout_s=startup_timeout_s)
        else:
            rc = run_dora(cmd, env, on_line, startup_timeout_s=startup_timeout_s, out=console, say=console.say)
    except KeyboardInterrupt:  # the user stopped it, and dora with it: a normal end
        return 0
    # a stop we asked for is a normal end of the replay
    return 0 if (not pending and rc in (0, 1, -signal.SIGINT, 130)) else rc


def _run(args: argparse.Namespace) -> int:
    if args.speed < 0:
        print("teledora replay: --speed must be >= 0", file=sys.stderr)
        return 2
    if args.exact and args.stamps == "shifted":
        print("teledora replay: --exact replays the recorded stamps; it cannot be combined with --stamps shifted", file=sys.stderr)
        return 2
    if args.exact and args.loop:
        print("teledora replay: --exact follows each journal once; it cannot be combined with --loop", file=sys.stderr)
        return 2
    args.stamps = args.stamps or ("recorded" if args.exact else "shifted")
    try:
        replay = plan_from_run(args)
        plan, replace, follow = replay.dataflow, replay.replace, replay.follow
        expect = expected_counts(plan, RunReader(args.run), replace)
        expect.update(follower_counts(plan, args.run.resolve(), follow))
    except (ReplayPlanError, RunFormatError, JournalError, OSError) as exc:
        print(f"teledora replay: {exc}", file=sys.stderr)
        return 2
    for warning in replay.warnings:
        print(f"teledora replay: warning: {warning}", file=sys.stderr)
    text = yaml.safe_dump(plan, sort_keys=False)
    if args.dry_run:
        print(text)
        return 0
    runs_dir = args.runs_dir or args.run.resolve().parent
    out_dir = new_run_dir(runs_dir, dt.datetime.now())
    yaml_path = out_dir / REPLAY_YAML
    yaml_path.write_text(text)
    _link_type_annotations(plan_dataflow_dir(args), out_dir)
    env = dora_environment(out_dir)
    cmd = dora_command(yaml_path, args.stop_after)
    followers = f"; following the journals of {', '.join(follow)}" if follow else ""
    print(f"teledora replay: {', '.join(replace)} from {args.run} at speed {args.speed:g}{followers}; {' '.join(cmd)}", flush=True)
    waiting = set(replace) | set(follow) if not args.loop else set()
    console = RunConsole(sys.stdout, out_dir / LOG_NAME, out_dir, verbose=args.verbose, expect=expect,
                         keep=_OUTCOME).start()
    try:
        rc = run_until_replayed(cmd, env, waiting, args.grace_s, out_dir, expect, startup_timeout_s=args.startup_timeout_s,
                                console=console)
    finally:
        closing = console.close()
    for line in closing:
        print(f"teledora replay: {line}")
    print(f"teledora replay: recording of the replay in {out_dir}", flush=True)
    return rc
