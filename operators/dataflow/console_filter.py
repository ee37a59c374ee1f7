"""What `teledora run` and `teledora demo` show of `dora run`'s output.

`dora run` prints every node's log, dora's own tracing and one warning per
input event a latest-only queue discards: over a thousand lines for one demo.
:class:`ConsoleFilter` reads that output line by line and keeps for the
console what a person must see:

* one line per node as dora starts it, and one once the dataflow runs;
* errors, and nodes that fail (an exit code, a signal, a status other than
  success);
* a node's own warnings and stderr, the first of each kind (numbers
  ignored) per node, up to :data:`SHOWN_PER_NODE` lines a node.

Everything else is counted, not shown: inputs dropped by latest-only queues
(dora's "Discarding event ... due to queue size limit" and "event channel
full" lines, summed per node and input), dora's own warnings, repeats, and
plain lines. :meth:`ConsoleFilter.closing` turns the counts into the few
lines printed when the run ends. The complete output goes to a log file;
that is the caller's part. :func:`format_status` and :class:`RateMeter` make
the live status line; :func:`index_rows` counts recorded rows from a topic's
checksum index, so the status costs no Arrow reading.

Pure: lines in, lines out; no clock, no files.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from dataclasses import dataclass, field

from teledora.operators.recording.batch_checksums import RECORD, RECORD_SIZE, SCHEMA_ROWS

SHOWN_PER_NODE = 20  # a node's warnings and stderr shown before the rest go to the log only

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")
_LEVELS = "TRACE|DEBUG|INFO|WARN|ERROR|stdout|stderr"
# "06:14:30 DEBUG  arms: spawner ...", "06:14:49 stdout recorder: ...", "06:14:30 INFO   [dora]: ..."
_TIMED = re.compile(rf"^(?:\d\d:\d\d:\d\d\s+)?(?P<level>{_LEVELS})\s+(?P<node>[^\s:]+):\s?(?P<text>.*)$")
# "arms: DEBUG    building node"
_BUILD = re.compile(r"^(?P<node>[^\s:]+):\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR)\s+(?P<text>.*)$")
# dora's tracing: "2026-12-06T06:16:09.389430Z  INFO run_inner: dora_daemon: ..."
_TRACING = re.compile(r"^\d{4}-\d\d-\d\dT\S+Z\s+(?P<level>TRACE|DEBUG|INFO|WARN|ERROR)\s+(?P<text>.*)$")
_TARGET = re.compile(r"^[\w.]+(?:::[\w.]+)+\s")  # a Rust module path: the line is dora's, not the node's
_SPAWNED = re.compile(r"spawner spawned node with pid (\d+)")
_READY = re.compile(r"daemon node is ready")
_ALL_READY = re.compile(r"all nodes are ready, starting dataflow")
_DISCARD = re.compile(r"Discarding event for input `([^`]+)` due to queue size limit")
_CHANNEL_FULL = re.compile(r"dropping zenoh input.*?\"input\":\"([^\"]+)\"(?:.*?\"drops\":(\d+))?")
_FAILED = re.compile(r"daemon (exited with code \d+|exited because of signal \S+)")
_STOPPED = re.compile(r"daemon handling node stop with exit status (\S+)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")


def strip_ansi(text: str) -> str:
    """``text`` without terminal colour and cursor sequences."""
    return ANSI.sub("", text)


@dataclass(frozen=True)
class DoraLine:
    """One line of ``dora run``'s output: its level (``TRACE`` .. ``ERROR``,
    ``stdout``, ``stderr``; ``""`` for a line of no known shape), the node it
    names (``[dora]`` for dora itself, ``""`` when none) and the rest."""

    level: str
    node: str
    text: str

    @property
    def from_dora(self) -> bool:
        """A line of dora's own (its daemon, its node API, zenoh), not one a node logged."""
        return self.node in ("[dora]", "") or bool(_TARGET.match(self.text)) or self.text.startswith(("daemon ", "spawner "))


def parse_line(line: str) -> DoraLine:
    """The parts of one output line (colour codes removed)."""
    text = strip_ansi(line).rstrip("\r\n")
    for pattern in (_TIMED, _BUILD):
        m = pattern.match(text)
        if m:
            return DoraLine(m.group("level"), m.group("node"), m.group("text"))
    m = _TRACING.match(text)
    if m:
        return DoraLine(m.group("level"), "[dora]", m.group("text"))
    return DoraLine("", "", text.strip())


def _kind(text: str) -> str:
    """A message with its numbers blanked: repeats of one warning share a kind."""
    return _NUMBER.sub("#", text)


@dataclass
class ConsoleFilter:
    """Splits ``dora run``'s output into console lines and counts (see the module's notes)."""

    shown_per_node: int = SHOWN_PER_NODE
    keep: re.Pattern | None = None  # a node's plain lines that are outcomes for this command (a replay's "replay X done:")
    started: set[str] = field(default_factory=set)
    ready: set[str] = field(default_factory=set)
    running: bool = False
    drops: Counter = field(default_factory=Counter)  # (node, input) -> events a latest-only queue dropped
    dora_warnings: int = 0
    repeats: Counter = field(default_factory=Counter)  # node -> warnings not shown again
    hidden: int = 0  # lines only in the log
    failed: dict[str, str] = field(default_factory=dict)  # node -> why
    _seen: set[tuple[str, str]] = field(default_factory=set)
    _shown: Counter = field(default_factory=Counter)

    def feed(self, line: str) -> list[str]:
        """The console lines for one line of output (often none)."""
        parsed = parse_line(line)
        node, text, level = parsed.node, parsed.text, parsed.level
        if not text:
            return []
        if self.keep is not None and node and not parsed.from_dora and self.keep.search(text):
            return [f"{node}: {text}"]
        if (m := _SPAWNED.search(text)) and node:
            self.started.add(node)
            return [f"{node} started (pid {m.group(1)})"]
        if _ALL_READY.search(text):
            self.running = True
            return [f"all {len(self.started) or len(self.ready)} nodes connected: the dataflow runs"]
        if _READY.search(text) and node:
            self.ready.add(node)
            self.hidden += 1
            return []
        if m := _DISCARD.search(text):
            self.drops[(node, m.group(1))] += 1
            return []
        if m := _CHANNEL_FULL.search(text):
            self.drops[(node, m.group(1))] += int(m.group(2) or 1)
            return []
        if m := _FAILED.search(text):
            self.failed[node] = m.group(1)
            return [f"{node} FAILED: {m.group(1)}"]
        if (m := _STOPPED.search(text)) and m.group(1) != "Success":
            self.failed.setdefault(node, f"exit status {m.group(1)}")
            return [f"{node} FAILED: exit status {m.group(1)}"]
        if level == "ERROR":
            return self._once(node, f"{node}: ERROR {text}", text)
        if level in ("WARN", "stderr"):
            if parsed.from_dora:
                self.dora_warnings += 1
                return []
            prefix = "WARN " if level == "WARN" else ""
            return self._once(node, f"{node}: {prefix}{text}", text)
        self.hidden += 1
        return []

    def _once(self, node: str, shown: str, text: str) -> list[str]:
        key = (node, _kind(text))
        if key in self._seen or self._shown[node] >= self.shown_per_node:
            self.repeats[node] += 1
            return []
        self._seen.add(key)
        self._shown[node] += 1
        return [shown]

    def closing(self, elapsed_s: float, log: str | None = None) -> list[str]:
        """The lines for the end of the run: the counts, at most three lines."""
        out = []
        total = sum(self.drops.values())
        if total:
            top = ", ".join(f"{n}/{i} {c:,}" for (n, i), c in self.drops.most_common(4))
            more = f" and {len(self.drops) - 4} more inputs" if len(self.drops) > 4 else ""
            out.append(f"latest-only queues dropped {total:,} stale inputs in {elapsed_s:.0f} s, as designed "
                       f"(only the newest is used): {top}{more}")
        if self.repeats:
            top = ", ".join(f"{n} {c:,}" for n, c in self.repeats.most_common(4))
            out.append(f"{sum(self.repeats.values()):,} repeated warnings not shown again ({top})")
        if log is not None:
            out.append(f"complete output ({self.hidden + self.dora_warnings + total:,} lines not shown here, "
                       f"{self.dora_warnings:,} of them dora's own warnings): {log}")
        return out


@dataclass(frozen=True)
class RunProgress:
    """What the status line says: seconds since ``dora run`` began, nodes
    started and connected, whether the dataflow runs, messages recorded so far
    and the rates (Hz) of the control path's topics by label."""

    elapsed_s: float
    nodes_started: int = 0
    nodes_ready: int = 0
    running: bool = False
    messages: int | None = None
    rates_hz: tuple[tuple[str, float], ...] = ()
    expected: int | None = None  # the messages a run with a known end will hold (a replay); then ``messages`` counts only those


def format_status(p: RunProgress) -> str:
    """One status line, short enough for an 80-column terminal."""
    if not p.running:
        return f"starting: {p.nodes_ready} of {p.nodes_started} nodes connected, {p.elapsed_s:.0f} s"
    parts = [f"{p.elapsed_s:.0f} s"]
    if p.messages is not None and p.expected:
        parts.append(f"{p.messages:,} of {p.expected:,} messages replayed ({100 * min(p.messages / p.expected, 1):.0f} %)")
    elif p.messages is not None:
        parts.append(f"{p.messages:,} messages recorded")
    if p.rates_hz:
        parts.append(" ".join(f"{label} {hz:.0f} Hz" for label, hz in p.rates_hz))
    return " | ".join(parts)


@dataclass
class RateMeter:
    """Rates from growing counts, over the last ``window_s`` seconds (the
    recorder flushes about once a second, so one step between two reads is
    too coarse to show)."""

    window_s: float = 5.0
    _samples: deque = field(default_factory=deque)

    def add(self, t_s: float, counts: dict[str, int]) -> dict[str, float]:
        """Adds the counts read at ``t_s``; returns each one's rate (Hz)."""
        self._samples.append((t_s, dict(counts)))
        while len(self._samples) > 2 and t_s - self._samples[1][0] >= self.window_s:
            self._samples.popleft()
        t0, first = self._samples[0]
        if t_s <= t0:
            return {}
        return {k: max(0, v - first.get(k, 0)) / (t_s - t0) for k, v in counts.items()}


def index_rows(data: bytes) -> tuple[int, int]:
    """Rows recorded in the whole records at the start of a checksum index
    (``operators/recording/batch_checksums.py``), and the bytes those records
    take (a partly written last record waits for the next read)."""
    rows = 0
    whole = len(data) - len(data) % RECORD_SIZE
    for start in range(0, whole, RECORD_SIZE):
        n = RECORD.unpack_from(data, start)[2]
        if n != SCHEMA_ROWS:
            rows += n
    return rows, whole
