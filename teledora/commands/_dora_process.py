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
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from typing import Callable, Mapping, Sequence, TextIO

DEFAULT_STARTUP_TIMEOUT_S = 120.0  # the sim dataflow starts in about 10 s on an idle 2-core machine
READY = re.compile(r"all nodes are ready, starting dataflow")
SPAWNED = re.compile(r"(\S+): spawner spawned node with pid (\d+)")
STOP_WAIT_S = 10.0  # after each Ctrl-C, before the next step
QUIET_LEVELS = ("warn", "error")  # dora log levels that hide the "all nodes are ready" line

LineHandler = Callable[[str, subprocess.Popen], None]


def _parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


class _Attempt:
    """One ``dora run``: echoes its output, notes the node pids it spawned and
    whether it started the dataflow."""

    def __init__(self, cmd: Sequence[str], env: Mapping[str, str], on_line: LineHandler | None, out: TextIO) -> None:
        self.proc = subprocess.Popen(list(cmd), env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)
        self.started = threading.Event()
        self.node_pids: list[int] = []
        self._on_line, self._out = on_line, out
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._out.write(line)
            spawned = SPAWNED.search(line)
            if spawned:
                self.node_pids.append(int(spawned.group(2)))
            elif READY.search(line):
                self.started.set()
            if self._on_line is not None:
                self._on_line(line, self.proc)
        self._out.flush()

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

    def finish(self) -> int:
        rc = self.proc.wait()
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


def run_dora(cmd: Sequence[str], env: Mapping[str, str], on_line: LineHandler | None = None,
             startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S, attempts: int = 2,
             out: TextIO | None = None, say: Callable[[str], None] | None = None) -> int:
    """Runs ``cmd`` (a ``dora run``) to its end and returns its exit status,
    echoing its output to ``out`` (stdout) and handing every line to
    ``on_line`` with the process. A run that has not started the dataflow
    within ``startup_timeout_s`` is stopped and started again, ``attempts``
    times in all; the last one's status is returned (1 when it never started).
    With ``DORA_LOG_LEVEL`` at warn or error dora does not print the start,
    so no run is stopped for want of it.
    A Ctrl-C reaches dora too: once it has ended, KeyboardInterrupt is raised."""
    if attempts < 1 or not startup_timeout_s > 0:
        raise ValueError("attempts must be >= 1 and startup_timeout_s > 0")
    if env.get("DORA_LOG_LEVEL", "").strip().lower() in QUIET_LEVELS:
        startup_timeout_s = float("inf")  # the start cannot be seen: never taken for a wedge
    out = sys.stdout if out is None else out
    say = say or (lambda text: print(f"teledora: {text}", file=sys.stderr, flush=True))
    for attempt in range(1, attempts + 1):
        run = _Attempt(cmd, env, on_line, out)
        try:
            if run.wait_started(startup_timeout_s):
                return run.finish()
        except KeyboardInterrupt:  # the user stopped it: dora got the same Ctrl-C; let it end, then say so
            run.finish()
            raise
        run.stop()
        again = "starting it again" if attempt < attempts else "giving up"
        say(f"dora did not start the dataflow within {startup_timeout_s:g} s (attempt {attempt} of {attempts}; "
            f"{len(run.node_pids)} node processes spawned, none let run); stopped it, {again}")
    return 1
