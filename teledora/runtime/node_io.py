"""Plumbing shared by every teledora node: contract codecs bound to a dora node,
diagnostics publishing, and keep-the-newest input handling.

A node builds one :class:`NodeIO` around its ``dora.Node`` (or a
``dora.testing.MockNode`` in tests) and uses it to decode inputs, send
contract messages and publish ``diagnostics`` about once a second.
"""

from __future__ import annotations

import functools
import os
import re
import time
from typing import Any, Iterable, Mapping

import pyarrow as pa
import yaml

from teledora.operators.contract.diagnostics import Diagnostics
from teledora.operators.contract.messages import MessageError, decode, encode


def node_id(default: str) -> str:
    """This node's id in the dataflow (from the config dora hands the node), else ``default``."""
    match = re.search(r"^node_id: *(\S+)", os.environ.get("DORA_NODE_CONFIG", ""), re.MULTILINE)
    return match.group(1) if match else default


def make_node(node: Any = None) -> Any:
    """The injected node (tests) or a real ``dora.Node`` (under a daemon)."""
    if node is not None:
        return node
    from dora import Node

    return Node()


class NodeIO:
    """Binds the message contract and diagnostics to one dora node.

    Every message sent carries the dora metadata ``seq``: a counter per output
    starting at 0, which names the message for gap detection and input journals.

    Args:
        node: ``dora.Node`` or ``dora.testing.MockNode``.
        name: Node id used in diagnostics and logs.
        clock: Returns host time in ns (injectable for tests).
        journal: Journal the node's input batches and clock reads on the
            ``journal`` output (and follow a recorded journal when
            ``TELEDORA_FOLLOW_JOURNAL`` is set); the node must then read
            batches with :meth:`next_batch` and the time with :meth:`now`.
    """

    def __init__(self, node: Any, name: str, clock=time.time_ns, journal: bool = False) -> None:
        self.node = node
        self.name = name
        self.clock = clock
        self.diag = Diagnostics(name)
        self.sent_per_output: dict[str, int] = {}
        self.journal = None
        if journal:
            from teledora.runtime.node_journal import NodeJournal, follow_run_from_env

            self.journal = NodeJournal(self, follow_run_from_env(), next_batch)

    def now(self) -> int:
        """The time now (host ns); journaled, or replayed from a journal."""
        return self.journal.now() if self.journal is not None else self.clock()

    def next_batch(self) -> list[Mapping[str, Any]] | None:
        """The next batch of events (see :func:`next_batch`), journaled."""
        return self.journal.next_batch() if self.journal is not None else next_batch(self.node)

    def _metadata(self, output: str, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
        meta = dict(metadata or {})
        meta["seq"] = self.sent_per_output.get(output, 0)
        return meta

    def _count(self, output: str) -> None:
        self.sent_per_output[output] = self.sent_per_output.get(output, 0) + 1

    def decode(self, event: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
        """Decodes an INPUT event as ``kind``; on a contract violation counts the
        rejection, logs why and returns None (the caller keeps its last state)."""
        self.diag.received += 1
        try:
            return decode(kind, event["value"])
        except MessageError as exc:
            self.reject(f"input {event.get('id')!r}: {exc}")
            return None

    def reject(self, reason: str) -> None:
        self.diag.reject(reason)
        self.log("warn", f"rejected {reason}")

    def send(self, output: str, kind: str, msg: Mapping[str, Any], metadata: dict[str, Any] | None = None) -> bool:
        """Encodes and sends a contract message. A message that would break the
        contract is not sent: it is counted as an error and logged."""
        try:
            value = encode(kind, msg)
        except MessageError as exc:
            self.diag.error(f"output {output!r} not sent: {exc}")
            self.log("error", f"output {output!r} not sent: {exc}")
            return False
        self.node.send_output(output, value, self._metadata(output, metadata))
        self._count(output)
        self.diag.sent += 1
        return True

    def send_raw(self, output: str, value: pa.Array, metadata: dict[str, Any] | None = None) -> None:
        """Sends a non-struct array (images)."""
        self.node.send_output(output, value, self._metadata(output, metadata))
        self._count(output)
        self.diag.sent += 1

    def publish_diagnostics(self, force: bool = False) -> None:
        """Sends ``diagnostics`` if a period has passed (or ``force``)."""
        now = self.now()
        if force or self.diag.due(now):
            self.node.send_output("diagnostics", encode("Diagnostics", self.diag.snapshot(now)), self._metadata("diagnostics", None))
            self._count("diagnostics")

    def log(self, level: str, message: str) -> None:
        try:
            self.node.log(level, message)
        except Exception:  # a log call must never take a node down
            print(f"[{self.name}] {level}: {message}", flush=True)


def backend_details(backend: Any) -> dict[str, Any]:
    """Extra diagnostics a device backend offers through its optional
    ``diagnostics_details()`` (the servo bus counters, say); none otherwise."""
    details = getattr(backend, "diagnostics_details", None)
    return dict(details()) if callable(details) else {}


def newest_per_input(events: Iterable[Mapping[str, Any]], latest_only: set[str]) -> list[Mapping[str, Any]]:
    """Collapses a burst of events: for input ids in ``latest_only`` only the
    newest INPUT survives (at the position of its last arrival); every other
    event is kept in order."""
    events = list(events)
    last_index: dict[str, int] = {}
    for i, ev in enumerate(events):
        if ev.get("type") == "INPUT" and ev.get("id") in latest_only:
            last_index[ev["id"]] = i
    kept = []
    for i, ev in enumerate(events):
        if ev.get("type") == "INPUT" and ev.get("id") in latest_only and last_index[ev["id"]] != i:
            continue
        kept.append(ev)
    return kept


@functools.lru_cache(maxsize=4)
def _data_inputs(node_config: str) -> frozenset[str]:
    """Inputs of this node that are fed by other nodes (not dora timers)."""
    if not node_config:
        return frozenset()
    try:
        inputs = (yaml.safe_load(node_config) or {}).get("run_config", {}).get("inputs", {}) or {}
    except yaml.YAMLError:
        return frozenset()
    out = set()
    for input_id, source in inputs.items():
        text = source.get("source", "") if isinstance(source, dict) else str(source)
        if not text.startswith("dora/timer"):
            out.add(input_id)
    return frozenset(out)


def _ending_inputs() -> frozenset[str]:
    """The inputs whose closing ends this node: ``TELEDORA_ENDS_WITH`` (comma
    separated, set per node in the dataflow) or else every data input. Feedback
    loops (teleop reads the arms, which read ik, which reads teleop) need the
    former: each node ends when its command input ends, and the end ripples
    down the graph from the source."""
    named = os.environ.get("TELEDORA_ENDS_WITH", "").strip()
    if named:
        return frozenset(n.strip() for n in named.split(",") if n.strip())
    return _data_inputs(os.environ.get("DORA_NODE_CONFIG", ""))


class _StreamState:
    """Which data inputs of a node have closed (kept per node object)."""

    def __init__(self) -> None:
        self.closed: set[str] = set()
        self.finished = False


# keyed by id(node); the node itself is kept so that its id cannot be reused
_streams: dict[int, tuple[Any, _StreamState]] = {}


def data_inputs() -> frozenset[str]:
    """This node's inputs that other nodes feed (empty outside a dataflow)."""
    return _data_inputs(os.environ.get("DORA_NODE_CONFIG", ""))


def next_batch(node: Any, timeout_s: float | None = None, ending: frozenset[str] | None = None) -> list[Mapping[str, Any]] | None:
    """Blocks for the next event, then takes whatever else is already queued.

    Returns None at end of stream. A node whose ending inputs (see
    ``_ending_inputs``) have closed also reaches the end, even while dora
    timers would keep ticking: upstream is gone, so a control node finishes
    (and its device stops) instead of running on forever. ``ending`` names
    those inputs instead. A timeout yields an empty list (dora reports a
    timeout as an ERROR event, which is not data)."""
    entry = _streams.get(id(node))
    if entry is None or entry[0] is not node:
        entry = _streams[id(node)] = (node, _StreamState())
    state = entry[1]
    if state.finished:
        return None
    first = node.next(timeout_s) if timeout_s is not None else node.next()
    if first is None:
        return None
    try:
        rest = list(node.drain() or [])
    except RuntimeError:
        # dora raises once the event channel has closed: nothing more will come
        rest = []
        state.finished = True
    batch = [first] + rest
    ending_inputs = _ending_inputs() if ending is None else ending
    for ev in batch:
        if ev.get("type") == "INPUT_CLOSED":
            state.closed.add(ev.get("id"))
    if ending_inputs and ending_inputs <= state.closed:
        state.finished = True
    return [ev for ev in batch if not (ev.get("type") == "ERROR" and "timeout" in str(ev.get("error", "")).lower())]
