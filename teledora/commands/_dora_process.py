"""``dora run`` for the CLI: its output echoed, and a start that never comes stopped and tried again.

dora starts a dataflow once every node has connected to its daemon, and then
prints "all nodes are ready, starting dataflow". dora 1.1.0 can wedge just
before that: every node process is up, connected and blocked in
``dora.Node()``, no node log has a line, and ``dora run`` waits for ever
(seen twice in the test suite's several hundred dataflow starts, once on the
full sim dataflow and once on a replay; a first Ctrl-C does not end it).
So when the line has not come within ``startup_timeout_s``, the run is
stopped (Ctrl-C twice, then SIGKILL to dora and to the node processes it
said it spawned) and started again, up to ``attempts`` times in all, saying
so. Nothing was recorded by then: the recorder is one of the nodes that
never started.

Once the dataflow runs, a :class:`RecorderGuard` watches its recorder: when
dora reports that node failed (an exit code, a signal), or its process is
gone without dora saying it finished, the run is ended. The robot already
holds by then (its actuator nodes watch the recorder's heartbeat), but the
other nodes would run on unrecorded; so one line says what happened and
where the recording and the recorder's log are, dora gets a Ctrl-C, and
after ``grace_s`` every node process it spawned that is still there is
killed, by pid. ``TELEDORA_RECORDER_GUARD=off`` keeps the run going instead
(said once at the start, and once when the recorder dies).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Mapping, Sequence, TextIO

import yaml

DEFAULT_STARTUP_TIMEOUT_S = 120.0  # the sim dataflow starts in about 10 s on an idle 2-core machine
READY = re.compile(r"all nodes are ready, starting dataflow")
SPAWNED = re.compile(r"(\S+): spawner spawned node with pid (\d+)")
STOP_WAIT_S = 10.0  # after each Ctrl-C, before the next step
QUIET_LEVELS = ("warn", "error")  # dora log levels that hide the "all nodes are ready" line
# dora 1.1.0's own lines about a node that ended: failed, or ended with this status
NODE_FAILED = re.compile(r"(\S+): daemon (exited with code \d+|exited because of signal \S+)")
NODE_STOPPED = re.compile(r"(\S+): daemon handling node stop with exit status (\S+)")
NODE_FINISHED = re.compile(r"(\S+): daemon \S+ finished successfully")
_ANSI = r"(?:\x1b\[[0-9;]*m)*"  # dora's tracing lines colour each field
DATAFLOW_ID = re.compile(rf"dataflow_id{_ANSI}={_ANSI}([0-9a-f]{{8}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{4}}-[0-9a-f]{{12}})")
RECORDER_GUARD_ENV = "TELEDORA_RECORDER_GUARD"
RECORDER_DIED_RC = 3  # the exit status of a run ended because its recorder died
GONE_CONFIRM_S = 3.0  # a vanished recorder pid waits this long for dora's word that it finished well

LineHandler = Callable[[str, subprocess.Popen], None]


def _parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot): with the pid, it
    names one process, so a pid reused later is never taken for it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[19]) if fields[0] != "Z" else None


def _kill_if_same(pid: int, start: int | None) -> bool:
    """SIGKILL to ``pid`` if it is still the process that started at ``start``."""
    if start is None or _start_time(pid) != start:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


@dataclass
class RecorderGuard:
    """What :func:`run_dora` does when the dataflow's recorder dies.

    Args:
        node: The recorder's node id.
        run_dir: Where its recording goes (named in the console line).
        logs_dir: dora's log folder of the dataflow (``<dataflow dir>/out``).
        grace_s: After the Ctrl-C, how long dora gets to stop its nodes
            before the remaining ones are killed.
    """

    node: str = "recorder"
    run_dir: str | None = None
    logs_dir: str | None = None
    grace_s: float = 10.0

    @property
    def off(self) -> bool:
        return os.environ.get(RECORDER_GUARD_ENV, "hold").strip().lower() == "off"


def recorder_node(dataflow: str | os.PathLike[str]) -> str | None:
    """The id of the dataflow's recorder node (started from
    ``nodes/recording/recorder.py`` or the ``teledora.nodes.recording.recorder``
    module), or None when it has none or the file cannot be read."""
    try:
        parsed = yaml.safe_load(Path(dataflow).read_text())
    except (OSError, yaml.YAMLError):
        return None
    for node in (parsed or {}).get("nodes", []) if isinstance(parsed, dict) else []:
        if not isinstance(node, dict):
            continue
        where = f"{node.get('path', '')} {node.get('args', '')}"
        if "recording/recorder.py" in where or "teledora.nodes.recording.recorder" in where:
            return str(node.get("id"))
    return None


class _Attempt:
    """One ``dora run``: echoes its output, notes the node pids it spawned and
    whether it started the dataflow."""

    def __init__(self, cmd: Sequence[str], env: Mapping[str, str], on_line: LineHandler | None, out: TextIO,
                 watch: str | None = None) -> None:
        self.proc = subprocess.Popen(list(cmd), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)
        self.started = threading.Event()
        self.node_pids: list[int] = []
        self.node_starts: dict[int, int | None] = {}  # pid -> start time, read when dora named it
        self.watch = watch
        self.watched_pid: int | None = None
        self.watched_failed = ""  # why dora says the watched node failed
        self.watched_finished = False  # dora says it ended well
        self.dataflow_id: str | None = None
        self._on_line, self._out = on_line, out
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._out.write(line)
            spawned = SPAWNED.search(line)
            if spawned:
                pid = int(spawned.group(2))
                self.node_pids.append(pid)
                self.node_starts[pid] = _start_time(pid)
                if spawned.group(1) == self.watch:
                    self.watched_pid = pid
            elif READY.search(line):
                self._schedule_dora()
                self.started.set()
            elif self.watch is not None:
                self._watch_line(line)
            if self.dataflow_id is None and (found := DATAFLOW_ID.search(line)):
                self.dataflow_id = found.group(1)
            if self._on_line is not None:
                self._on_line(line, self.proc)
        self._out.flush()

    def _schedule_dora(self) -> None:
        """dora's process to its real-time policy (scheduling.yaml ``daemon``),
        now that every node is spawned: the control path waits for it."""
        from teledora.runtime.realtime import load_scheduling, schedule_process

        try:
            table = load_scheduling()
        except (OSError, ValueError) as exc:
            self._out.write(f"teledora: scheduling.yaml not applied to dora: {exc}\n")
            return
        if table is None:
            return
        report = schedule_process(self.proc.pid, table.for_daemon())
        if report.problem:
            self._out.write(f"teledora: {report.problem}; dora runs unprioritised\n")

    def _watch_line(self, line: str) -> None:
        failed = NODE_FAILED.search(line)
        if failed and failed.group(1) == self.watch:
            self.watched_failed = self.watched_failed or failed.group(2)
            return
        stopped = NODE_STOPPED.search(line)
        if stopped and stopped.group(1) == self.watch:
            if stopped.group(2) == "Success":
                self.watched_finished = True
            else:
                self.watched_failed = self.watched_failed or f"exit status {stopped.group(2)}"
            return
        finished = NODE_FINISHED.search(line)
        if finished and finished.group(1) == self.watch:
            self.watched_finished = True

    def watched_gone(self) -> bool:
        """True once the watched node's process (its pid, as started) is gone."""
        pid = self.watched_pid
        return pid is not None and _start_time(pid) != self.node_starts.get(pid)

    def wait_started(self, timeout_s: float) -> bool:
        """True once dora started the dataflow, or when it ended before (its
        exit status then says what happened); False when neither came in time."""
        deadline = time.monotonic() + timeout_s
        while not self.started.wait(0.2):
            if self.proc.poll() is not None:
                return True
            if time.monotonic() >= deadline:
                return False
        return True

    def finish(self, timeout_s: float | None = None) -> int:
        """dora's exit status once it has ended (``subprocess.TimeoutExpired``
        when ``timeout_s`` passes first)."""
        rc = self.proc.wait(timeout_s)
        self._reader.join(timeout=5.0)
        return rc

    def stop(self) -> None:
        """Ctrl-C, again, then SIGKILL to dora and to the nodes it spawned
        that are still its children."""
        children = [p for p in self.node_pids if _parent_pid(p) == self.proc.pid]
        for _ in range(2):
            if self.proc.poll() is not None:
                break
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                pass
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for pid in children:
            if _parent_pid(pid) is not None:  # still there (now an orphan): ours, by pid
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._reader.join(timeout=5.0)


    def end_after_recorder(self, grace_s: float) -> None:
        """Ctrl-C to dora; after ``grace_s`` (or once dora has ended) every
        node process it spawned that is still the same process is killed, by
        pid; then dora itself if it is still there."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                pass
        for pid in self.node_pids:
            _kill_if_same(pid, self.node_starts.get(pid))
        if self.proc.poll() is None:
            try:
                self.proc.wait(STOP_WAIT_S)  # its nodes are gone: dora has nothing left to wait for
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait()
        self._reader.join(timeout=5.0)


def _recorder_line(guard: RecorderGuard, run: _Attempt, why: str) -> str:
    where = f"the recording up to its last flush is in {guard.run_dir}" if guard.run_dir else "its recording stops here"
    logs = Path(guard.logs_dir or "out")
    name = f"log_{guard.node}.jsonl"
    if run.dataflow_id:
        log = logs / run.dataflow_id / name
    else:  # dora named no dataflow id: its newest log of that node
        found = sorted(logs.glob(f"*/{name}"), key=lambda p: p.stat().st_mtime)
        log = found[-1] if found else logs
    if guard.off:
        return (f"the recorder ({guard.node}) died ({why}); {RECORDER_GUARD_ENV}=off: the run goes on UNRECORDED; "
                f"{where}; its log: {log}")
    return (f"the recorder ({guard.node}) died ({why}): the robot holds and the run is being stopped; "
            f"{where}; its log: {log}")


def _watch_recorder(run: _Attempt, guard: RecorderGuard, say: Callable[[str], None]) -> int:
    """Waits for the run to end; ends it when its recorder dies (see the module's notes)."""
    gone_since: float | None = None
    said = False
    while True:
        try:
            return run.finish(timeout_s=0.2)
        except subprocess.TimeoutExpired:
            pass
        why = run.watched_failed
        if not why and not run.watched_finished and run.watched_gone():
            gone_since = gone_since or time.monotonic()
            if time.monotonic() - gone_since >= GONE_CONFIRM_S:
                why = "its process is gone"
        if not why or said:
            continue
        said = True
        say(_recorder_line(guard, run, why))
        if not guard.off:
            run.end_after_recorder(guard.grace_s)
            return RECORDER_DIED_RC


def run_dora(cmd: Sequence[str], env: Mapping[str, str], on_line: LineHandler | None = None,
             startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S, attempts: int = 2,
             out: TextIO | None = None, say: Callable[[str], None] | None = None,
             recorder: RecorderGuard | None = None) -> int:
    """Runs ``cmd`` (a ``dora run``) to its end and returns its exit status,
    echoing its output to ``out`` (stdout) and handing every line to
    ``on_line`` with the process. A run that has not started the dataflow
    within ``startup_timeout_s`` is stopped and started again, ``attempts``
    times in all; the last one's status is returned (1 when it never started).
    With ``DORA_LOG_LEVEL`` at warn or error dora does not print the start,
    so no run is stopped for want of it.
    A Ctrl-C reaches dora too: once it has ended, KeyboardInterrupt is raised.
    With ``recorder``, a run whose recorder dies is ended and
    :data:`RECORDER_DIED_RC` returned (unless the guard is off)."""
    if attempts < 1 or not startup_timeout_s > 0:
        raise ValueError("attempts must be >= 1 and startup_timeout_s > 0")
    if env.get("DORA_LOG_LEVEL", "").strip().lower() in QUIET_LEVELS:
        startup_timeout_s = float("inf")  # the start cannot be seen: never taken for a wedge
    out = sys.stdout if out is None else out
    say = say or (lambda text: print(f"teledora: {text}", file=sys.stderr, flush=True))
    if recorder is not None and recorder.off:
        say(f"{RECORDER_GUARD_ENV}=off: the robot moves without a recording, and the run goes on if the recorder dies")
    for attempt in range(1, attempts + 1):
        run = _Attempt(cmd, env, on_line, out, watch=recorder.node if recorder is not None else None)
        try:
            if run.wait_started(startup_timeout_s):
                return run.finish() if recorder is None else _watch_recorder(run, recorder, say)
        except KeyboardInterrupt:  # the user stopped it: dora got the same Ctrl-C; let it end, then say so
            run.finish()
            raise
        run.stop()
        again = "starting it again" if attempt < attempts else "giving up"
        say(f"dora did not start the dataflow within {startup_timeout_s:g} s (attempt {attempt} of {attempts}; "
            f"{len(run.node_pids)} node processes spawned, none let run); stopped it, {again}")
    return 1
