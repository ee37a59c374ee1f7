"""recorder: writes every input it receives into a run directory.

Wire each topic to record as an input named ``<node>__<output>`` with
``queue_policy: backpressure``, e.g.::

    - id: recorder
      path: ../nodes/recording/recorder.py
      inputs:
        xr__controllers: {source: xr/controllers, queue_policy: backpressure}
      outputs: [status, diagnostics]

``status`` is the heartbeat (RecorderStatus, every 0.2 s) that the actuator
nodes watch (docs/recording.md, "When the recorder fails").

Environment (command-line flags of the same name override it):
    TELEDORA_RUNS_DIR            where runs go (default ``runs``, relative to
                                 the dataflow directory)
    TELEDORA_RUN_DIR             exact run directory to create (optional)
    TELEDORA_RECORD_FSYNC        1 to fsync at every flush (default 0)
    TELEDORA_DATAFLOW            path of the dataflow YAML to store in the manifest
    TELEDORA_REPLAY_OF           set by ``teledora replay``: the run being replayed

Tuning (flush interval, batch pause, CPU priority) comes from the
``recorder`` section of recording.yaml (``--config``); ``--flush-interval-s``,
``--batch-pause-s`` and ``--priority`` override it for one run.

The run directory path is printed when recording starts and when it ends.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from dataclasses import replace
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import yaml

from teledora.models.config_files import RECORDING, add_config_arg, load_recording_config
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.recording.message_check import MessageCheck
from teledora.operators.recording.recording_config import STATUS_PERIOD_S
from teledora.operators.recording.recording_gaps import GapDetector
from teledora.recording import MANIFEST_NAME, RunWriter, TopicNameError, TopicTypeError, new_run_dir

# After a short batch the recorder waits recording.yaml's batch_pause_s, so
# messages reach it in batches of a few dozen instead of one by one: 22 % less
# CPU per message and fewer wake-ups at its raised priority
# (docs/recording.md, "CPU priority")
# events taken from dora per loop turn: the flush and the heartbeat are checked
# between slices, so a long backlog cannot hold them off (one event costs dora
# and the recorder roughly 0.1-0.3 ms of CPU, so a slice is tens of ms of CPU)
MAX_EVENTS_PER_TURN = 100
COUNTER_METADATA_KEY = "seq"


PROVENANCE_PACKAGES = ("teledora", "dora-rs", "dora-rs-cli", "pyarrow", "numpy", "mujoco", "mink", "pyyaml")


def package_versions(names: Iterable[str] = PROVENANCE_PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``names`` (None for a package that is absent)."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_revision(cwd: str | os.PathLike[str]) -> dict[str, Any]:
    """``{"commit": sha, "dirty": bool}`` of the checkout holding ``cwd``
    (``commit`` None outside a git checkout or without git)."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=cwd, capture_output=True, text=True, timeout=5
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": sha or None, "dirty": bool(status.strip())}


class Heartbeat:
    """Sends ``status`` (RecorderStatus) every ``STATUS_PERIOD_S``: actuator
    nodes that take it as ``recorder_status`` hold the robot when it stops or
    reports a lag above their bound (:mod:`teledora.operators.recording.recorder_watch`).
    dora 1.1.0 silently drops it where the dataflow does not declare ``status``;
    should a send raise, the heartbeat stops with one warning."""

    def __init__(self, io: NodeIO, clock: Callable[[], int]) -> None:
        self.io = io
        self.clock = clock
        self.next_ns = 0
        self.enabled = True

    def maybe_send(self, now_ns: int, messages: int, lag_ns: int) -> None:
        if not self.enabled or now_ns < self.next_ns:
            return
        self.next_ns = now_ns + int(STATUS_PERIOD_S * 1e9)
        try:
            self.io.send("status", "RecorderStatus", {"stamp_ns": now_ns, "recording": True, "messages": messages, "lag_ns": max(0, lag_ns)})
        except Exception as exc:  # an output the dataflow does not declare
            self.enabled = False
            self.io.log("warn", f"no heartbeat: cannot send 'status' ({exc}); declare it to let actuators watch the recorder")


class LagTracker:
    """How far the recorder runs behind the senders: receive time minus
    dora's send timestamp, per message, summarised as percentiles."""

    def __init__(self, keep: int = 1_000_000, recent: int = 1000) -> None:
        self._lags_ns: list[int] = []
        self._recent: collections.deque[int] = collections.deque(maxlen=recent)
        self._keep = keep
        self.max_ns = 0
        self.last_ns = 0

    def observe(self, lag_ns: int) -> None:
        self.last_ns = lag_ns
        self.max_ns = max(self.max_ns, lag_ns)
        self._recent.append(lag_ns)
        if len(self._lags_ns) < self._keep:
            self._lags_ns.append(lag_ns)

    def summary_ms(self, recent: bool = False) -> dict[str, float | int]:
        """``{n, p50, p99, max}`` in ms over every message with a send time
        (the first ``keep``), or over the last ``recent`` ones (cheap)."""
        lags = self._recent if recent else self._lags_ns
        if not lags:
            return {"n": 0}
        ordered = sorted(lags)
        pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] / 1e6  # noqa: E731
        top = ordered[-1] if recent else self.max_ns
        return {"n": len(ordered), "p50": round(pick(0.5), 3), "p99": round(pick(0.99), 3), "max": round(top / 1e6, 3)}


class _TerminationFlag:
    """Turns SIGTERM (what dora sends a node that outlives a stop) and SIGINT
    into a flag the event loop checks, so the run is closed properly. The loop
    wakes at least every flush interval, so it sees the flag promptly."""

    def __init__(self) -> None:
        self.signal_name: str | None = None
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._previous[sig] = signal.signal(sig, self._set)

    def _set(self, signum: int, _frame: Any) -> None:
        self.signal_name = signal.Signals(signum).name

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()


def raise_priority(steps: int) -> tuple[int, int, str]:
    """Lowers this process's nice value by ``steps`` (a higher CPU priority),
    so that on cores shared with the whole dataflow the recorder gets the CPU
    it needs to keep up instead of an equal share of it; every thread started
    afterwards (dora's) inherits it. Must run before the dora node is made.

    Returns ``(nice before, nice after, why not)``; ``why not`` is empty when
    it worked or was not asked for, else the reason (raising a priority needs
    root, ``CAP_SYS_NICE`` or an ``RLIMIT_NICE`` that allows it)."""
    before = os.nice(0)
    if steps <= 0:
        return before, before, ""
    try:
        after = os.nice(-steps)
    except OSError as exc:
        return before, os.nice(0), f"cannot raise the recorder's CPU priority by {steps} ({exc.strerror or exc})"
    return before, after, ""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(prog="recorder", description="Record dora topics into a run directory.")
    parser.add_argument("--runs-dir", default=env.get("TELEDORA_RUNS_DIR", "runs"))
    parser.add_argument("--run-dir", default=env.get("TELEDORA_RUN_DIR") or None)
    parser.add_argument("--fsync", action="store_true", default=env.get("TELEDORA_RECORD_FSYNC", "0") == "1")
    parser.add_argument("--dataflow", default=env.get("TELEDORA_DATAFLOW") or None)
    add_config_arg(parser, RECORDING)
    # overrides of recording.yaml's recorder section
    parser.add_argument("--flush-interval-s", type=float, default=None)
    parser.add_argument("--batch-pause-s", type=float, default=None)
    parser.add_argument("--priority", type=int, default=None, help="nice steps (priority_boost_nice)")
    args = parser.parse_args(list(argv) if argv is not None else [])
    try:
        tuning = load_recording_config(args.config).recorder
        overrides = {"flush_interval_s": args.flush_interval_s, "batch_pause_s": args.batch_pause_s,
                     "priority_boost_nice": args.priority}
        tuning = replace(tuning, **{k: v for k, v in overrides.items() if v is not None})
    except (OSError, ValueError) as exc:
        parser.error(str(exc))
    args.flush_interval_s, args.batch_pause_s, args.priority = (
        tuning.flush_interval_s, tuning.batch_pause_s, tuning.priority_boost_nice)
    return args


def dataflow_source(explicit: str | None, descriptor: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(path, YAML text) of the running dataflow.

    Uses ``explicit`` when given, else the YAML file named on the command line
    of the ``dora run`` that started this node, else the parsed descriptor
    dora hands the node, dumped back to YAML.
    """
    candidates: list[Path] = []
    if explicit:
        candidates.append(Path(explicit))
    parent = os.environ.get("DORA_RUN_PARENT_PID")
    if parent and Path(f"/proc/{parent}/cmdline").exists():
        try:
            args = Path(f"/proc/{parent}/cmdline").read_bytes().split(b"\0")
            cwd = Path(os.readlink(f"/proc/{parent}/cwd"))
            for arg in args:
                text = arg.decode(errors="replace")
                if text.endswith((".yml", ".yaml")):
                    candidates.append(cwd / text)
        except OSError:
            pass
    for path in candidates:
        if path.is_file():
            return str(path.resolve()), path.read_text()
    if descriptor:
        return None, yaml.safe_dump(_prune_nulls(descriptor), sort_keys=False)
    return None, None


def _prune_nulls(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _prune_nulls(v) for k, v in obj.items() if v is not None}
    if isinstance(obj, list):
        return [_prune_nulls(v) for v in obj]
    return obj


def _descriptor(node: Any) -> dict[str, Any] | None:
    try:
        desc = node.dataflow_descriptor()
    except Exception:  # MockNode or an old runtime: the manifest just lacks it
        return None
    return desc if isinstance(desc, dict) and desc else None


def build_manifest(node: Any, me: str, args: argparse.Namespace) -> dict[str, Any]:
    """Provenance stored with the run: dataflow text, versions, git revision."""
    descriptor = _descriptor(node)
    path, text = dataflow_source(args.dataflow, descriptor)
    inputs: dict[str, Any] = {}
    for entry in (descriptor or {}).get("nodes", []) or []:
        if entry.get("id") == me:
            inputs = {k: (v.get("source") if isinstance(v, dict) else v) for k, v in (entry.get("inputs") or {}).items()}
    cwd = os.getcwd()
    try:
        dataflow_id = str(node.dataflow_id())
    except Exception:
        dataflow_id = None
    return {
        "recorder": me,
        "dataflow_id": dataflow_id,
        "dataflow_path": path,
        "dataflow_dir": cwd,
        "dataflow_yaml": text,
        "recorded_inputs": inputs,
        "replay_of": os.environ.get("TELEDORA_REPLAY_OF") or None,
        "packages": package_versions(),
        "python": sys.version.split()[0],
        "git": git_revision(cwd),
    }


def reject(writer: RunWriter, io: NodeIO, topic: Any, why: str) -> None:
    """Refuses one message: counted in the diagnostics (which turn ``warn``)
    and in the manifest's ``rejected``, so the run still says it arrived."""
    reason = f"input {topic!r}: {why}"
    writer.reject(topic, reason)
    io.reject(reason)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> Path:
    args = parse_args(argv if argv is not None else sys.argv[1:])
    me = node_id("recorder")
    # a node handed in (tests) shares its process with the caller: leave its priority
    nice_before, nice_after, nice_problem = raise_priority(args.priority if node is None else 0)
    node = make_node(node)
    io = NodeIO(node, me, clock=clock)
    if nice_problem:
        io.log("warn", f"{nice_problem}: it gets an equal share of busy cores and may fall behind (docs/recording.md)")
    start_ns = clock()
    if args.run_dir:
        run_dir = Path(args.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        if (run_dir / MANIFEST_NAME).exists():
            raise SystemExit(f"recorder: {run_dir} already holds a recording; refusing to overwrite it")
    else:
        run_dir = new_run_dir(args.runs_dir, dt.datetime.fromtimestamp(start_ns / 1e9))
    manifest = build_manifest(node, me, args)
    manifest["recorder_nice"] = {"before": nice_before, "after": nice_after}
    writer = RunWriter(
        run_dir, manifest, flush_interval_s=args.flush_interval_s, fsync=args.fsync, start_ns=start_ns
    )
    print(f"recording to {run_dir.resolve()}", flush=True)
    gaps = GapDetector()
    lag = LagTracker()
    flushes = 0
    stop = _TerminationFlag()
    heartbeat = Heartbeat(io, clock)
    check = MessageCheck()
    while not stop.signal_name and (batch := io.next_batch(min(args.flush_interval_s, STATUS_PERIOD_S), MAX_EVENTS_PER_TURN)) is not None:
        for event in batch:
            if event.get("type") != "INPUT":
                continue
            recv_ns = clock()
            io.diag.received += 1
            topic = event.get("id")
            meta = event.get("metadata")
            meta = {} if meta is None else meta
            value, why = check(topic, event.get("value"), meta) if isinstance(topic, str) else (None, "")
            if value is None:
                reject(writer, io, topic, why or f"input id {topic!r} is not a string")
                continue
            try:
                result = writer.append(topic, value, meta, recv_ns)
            except (TopicTypeError, TopicNameError) as exc:
                io.reject(str(exc))
                continue
            except Exception as exc:  # anything else one message can cause must not end the recording
                reject(writer, io, topic, f"cannot be recorded ({type(exc).__name__}: {exc})")
                continue
            for reason in result.rejected:
                io.reject(reason)
            if result.dora_ns is not None:
                lag.observe(recv_ns - result.dora_ns)
            counter = meta.get(COUNTER_METADATA_KEY)
            event_ns = recv_ns if result.dora_ns is None else result.dora_ns
            for gap in gaps.observe(result.topic, event_ns, counter if isinstance(counter, int) else None):
                # a stall may just be a busy machine; a counter jump is a lost message
                level = "info" if gap.kind == "stall" else "warn"
                missing = f"{gap.missing} missing (by its counter)" if gap.exact else f"~{gap.missing} missing"
                io.log(level, f"gap on {gap.topic}: {gap.kind}, {gap.duration_s:.3f} s, {missing}")
            # the flush is due by the clock, not by batch: a long drained batch
            # must not keep received rows in memory past the flush interval
            if writer.flush_due(recv_ns):
                writer.flush(recv_ns)
                flushes += 1
            heartbeat.maybe_send(recv_ns, writer.messages, lag.last_ns)
        now = clock()
        if writer.flush_due(now):
            writer.flush(now)
            flushes += 1
        heartbeat.maybe_send(now, writer.messages, lag.last_ns)
        if args.batch_pause_s > 0 and len(batch) < MAX_EVENTS_PER_TURN:
            time.sleep(args.batch_pause_s)  # fewer, larger batches: fewer wake-ups
        if io.diag.due(now):
            io.diag.details = {
                "run_dir": str(run_dir),
                "messages": writer.messages,
                "topics": len(writer.counts()),
                "flushes": flushes,
                "gaps": gaps.counts(),
                "type_errors": sum(writer.type_errors.values()),
                "name_errors": sum(writer.name_errors.values()),
                "refused": sum(e["count"] for e in writer.rejected.values()),
                "lag_ms": lag.summary_ms(recent=True),
            }
            io.publish_diagnostics()
    stop.restore()
    writer.manifest["ended_by"] = stop.signal_name or "end of stream"
    if stop.signal_name:
        io.log("warn", f"{stop.signal_name}: closing the run with what has arrived")
    io.diag.details.update(messages=writer.messages, gaps=gaps.counts(), complete=True)
    io.publish_diagnostics(force=True)
    writer.manifest["gaps"] = gaps.counts()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    writer.manifest["recorder_cpu_s"] = round(usage.ru_utime + usage.ru_stime, 3)
    writer.manifest["lag_ms"] = lag.summary_ms()
    for reason in writer.close(clock()):
        io.reject(reason)
    print(f"recording finished: {run_dir.resolve()} ({writer.messages} messages)", flush=True)
    return run_dir


if __name__ == "__main__":
    main()
