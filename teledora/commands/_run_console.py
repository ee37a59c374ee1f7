"""The console of `teledora run` / `teledora demo`: a few lines, a live status, the whole output in a log file.

:class:`RunConsole` stands where :func:`~teledora.commands._dora_process.run_dora`
writes dora's output (it takes one line per ``write``). Every line goes to
the log file, colour codes removed; the console gets what
:class:`~teledora.operators.dataflow.console_filter.ConsoleFilter` keeps, or,
with ``verbose``, every line (colour codes kept only on a terminal). A
status line (:func:`~teledora.operators.dataflow.console_filter.format_status`)
rewrites itself once a second on a terminal and is printed every
``status_period_s`` otherwise. Its counts come from the run directory's
checksum indexes (:class:`RunWatch`), read from where the last read ended.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from typing import Callable, TextIO

from teledora.operators.dataflow.console_filter import (ConsoleFilter, RateMeter, RunProgress, format_status,
                                                        index_rows, strip_ansi)
from teledora.recording.run_dir import INDEX_SUFFIX, TOPIC_SUFFIX

STATUS_PERIOD_S = 10.0  # a status line this often when the console is no terminal
TTY_PERIOD_S = 1.0
LOG_NAME = "dora.log"
# the control path, as the status line names it: topic -> label
CONTROL_TOPICS = (("teleop__arm_targets", "teleop"), ("teleop__joint_commands", "ik"), ("arms__joint_states", "arms"))


class RunWatch:
    """Rows recorded so far per topic of a run directory, from the topics'
    checksum indexes (each read goes on from where the last one ended)."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._offsets: dict[Path, int] = {}
        self._rows: dict[str, int] = {}

    def counts(self) -> dict[str, int]:
        for path in self.run_dir.glob(f"*{TOPIC_SUFFIX}{INDEX_SUFFIX}"):
            start = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(start)
                    data = f.read()
            except OSError:
                continue
            rows, used = index_rows(data)
            self._offsets[path] = start + used
            topic = path.name[: -len(TOPIC_SUFFIX + INDEX_SUFFIX)]
            self._rows[topic] = self._rows.get(topic, 0) + rows
        return dict(self._rows)


class RunConsole:
    """See the module's notes. ``out`` is the console, ``log`` the log file's path."""

    def __init__(self, out: TextIO, log: Path, run_dir: Path | None = None, verbose: bool = False,
                 tty: bool | None = None, status_period_s: float = STATUS_PERIOD_S,
                 clock: Callable[[], float] = time.monotonic, expect: dict[str, int] | None = None,
                 keep: re.Pattern | None = None) -> None:
        self.out = out
        self.expect = dict(expect or {})  # topic -> messages the run will hold (a replay): the status line shows how far it is
        self.log_path = log
        log.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(log, "a", encoding="utf-8", buffering=1)  # line by line: it can be followed live
        self.filter = ConsoleFilter(keep=keep)
        self.verbose = verbose
        self.tty = out.isatty() if tty is None else tty
        self.watch = RunWatch(run_dir) if run_dir is not None else None
        self.meter = RateMeter()
        self.period_s = TTY_PERIOD_S if self.tty else status_period_s
        self.clock = clock
        self.t0 = clock()
        self._lock = threading.Lock()
        self._status_shown = False
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    # run_dora writes dora's output here, one line at a time
    def write(self, line: str) -> int:
        with self._lock:
            self._log.write(strip_ansi(line))
            if self.verbose:
                self._print(line.rstrip("\n") if self.tty else strip_ansi(line).rstrip("\n"))
            else:
                for shown in self.filter.feed(line):
                    self._print(shown)
        return len(line)

    def flush(self) -> None:
        with self._lock:
            self._log.flush()
            self.out.flush()

    def say(self, text: str) -> None:
        """A line of teledora's own, to the console and the log."""
        with self._lock:
            self._log.write(f"teledora: {text}\n")
            self._print(f"teledora: {text}")

    def _print(self, text: str) -> None:
        if self._status_shown:
            self.out.write("\r\x1b[K")
            self._status_shown = False
        self.out.write(text + "\n")
        self.out.flush()

    def progress(self) -> RunProgress:
        elapsed = self.clock() - self.t0
        messages, rates = None, ()
        if self.watch is not None and self.filter.running:
            counts = self.watch.counts()
            if counts:
                if self.expect:
                    messages = sum(min(counts.get(t, 0), n) for t, n in self.expect.items())
                else:
                    messages = sum(counts.values())
                hz = self.meter.add(elapsed, counts)
                rates = tuple((label, hz[t]) for t, label in CONTROL_TOPICS if t in hz)
        expected = sum(self.expect.values()) or None
        return RunProgress(elapsed, len(self.filter.started), len(self.filter.ready), self.filter.running, messages, rates,
                           expected)

    def status(self) -> None:
        """Shows the status line once (rewritten in place on a terminal)."""
        if self.verbose:
            return
        text = format_status(self.progress())
        with self._lock:
            if self.tty:
                self.out.write("\r\x1b[K" + text)
                self._status_shown = True
                self.out.flush()
            else:
                self.out.write(text + "\n")
                self.out.flush()

    def start(self) -> "RunConsole":
        def tick() -> None:
            while not self._stop.wait(self.period_s):
                self.status()
        self._ticker = threading.Thread(target=tick, daemon=True)
        self._ticker.start()
        return self

    def close(self) -> list[str]:
        """Stops the status line and closes the log; returns the closing
        lines of the counts (for the caller to print with its own)."""
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5.0)
        with self._lock:
            if self._status_shown:
                self.out.write("\r\x1b[K")
                self._status_shown = False
            self._log.close()
        if self.verbose:
            return [f"complete output: {self.log_path}"]
        return self.filter.closing(self.clock() - self.t0, str(self.log_path))
