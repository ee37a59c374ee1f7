"""One node's dora event stream, read in batches, with its end-of-stream state.

A node never reads dora events itself: its :class:`~teledora.runtime.node_io.NodeIO`
owns one :class:`EventStream` and hands out batches through ``io.next_batch()``.
The stream knows which of the node's inputs have closed and when the node's
stream has ended, so two nodes in one process (tests) never share that state.
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any, Callable, Iterable, Mapping

import yaml

ENDS_WITH_ENV = "TELEDORA_ENDS_WITH"
BATCH_SPACING_ENV = "TELEDORA_BATCH_SPACING_S"
MAX_BATCH_SPACING_S = 0.1  # the longest a node may hold its inputs back, whatever it asks


class _TaggedLoader(yaml.SafeLoader):
    """A safe loader that reads dora's tagged values (``!Tcp`` …) as plain data."""


_TaggedLoader.add_multi_constructor(
    "!",
    lambda loader, _suffix, node: (
        loader.construct_mapping(node) if isinstance(node, yaml.MappingNode)
        else loader.construct_sequence(node) if isinstance(node, yaml.SequenceNode)
        else loader.construct_scalar(node)
    ),
)


@functools.lru_cache(maxsize=4)
def _data_inputs(node_config: str) -> frozenset[str]:
    """Inputs of this node that are fed by other nodes (not dora timers).

    dora's node config carries YAML tags (``daemon_communication: !Tcp``)
    that a plain safe load refuses; they are read as plain data."""
    if not node_config:
        return frozenset()
    try:
        inputs = (yaml.load(node_config, Loader=_TaggedLoader) or {}).get("run_config", {}).get("inputs", {}) or {}
    except yaml.YAMLError:
        return frozenset()
    out = set()
    for input_id, source in inputs.items():
        text = source.get("source", "") if isinstance(source, dict) else str(source)
        if not text.startswith("dora/timer"):
            out.add(input_id)
    return frozenset(out)


def data_inputs() -> frozenset[str]:
    """This node's inputs that other nodes feed (empty outside a dataflow)."""
    return _data_inputs(os.environ.get("DORA_NODE_CONFIG", ""))


def ending_inputs() -> frozenset[str]:
    """The inputs whose closing ends this node: ``TELEDORA_ENDS_WITH`` (comma
    separated, set per node in the dataflow) or else every data input. Feedback
    loops (teleop reads the arms, which read ik, which reads teleop) need the
    former: each node ends when its command input ends, and the end ripples
    down the graph from the source."""
    named = os.environ.get(ENDS_WITH_ENV, "").strip()
    if named:
        return frozenset(n.strip() for n in named.split(",") if n.strip())
    return data_inputs()


def batch_spacing_from_env() -> float:
    """``TELEDORA_BATCH_SPACING_S`` (seconds, 0 when unset): how long a node lets
    its inputs gather between two takes.

    Raises:
        ValueError: not a number, or outside 0..MAX_BATCH_SPACING_S.
    """
    text = os.environ.get(BATCH_SPACING_ENV, "").strip()
    if not text:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{BATCH_SPACING_ENV} must be a number of seconds, got {text!r}") from None
    if not 0.0 <= value <= MAX_BATCH_SPACING_S:
        raise ValueError(f"{BATCH_SPACING_ENV} must be within 0..{MAX_BATCH_SPACING_S:g} s, got {text}")
    return value


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


def _is_timeout(event: Mapping[str, Any]) -> bool:
    """dora reports a timeout of ``next(timeout)`` as an ERROR event, which is not data."""
    return event.get("type") == "ERROR" and "timeout" in str(event.get("error", "")).lower()


class EventStream:
    """Reads one node's events in batches and decides when its stream has ended.

    Args:
        node: ``dora.Node`` or ``dora.testing.MockNode``.
        ends_with: Inputs whose closing ends this stream; None applies
            :func:`ending_inputs` (``TELEDORA_ENDS_WITH`` or every data input),
            an empty set means that no input's end ends it (a source node that
            runs until STOP).
        batch_spacing_s: Least time between two batches taken by
            :meth:`next_batch` (0: take each event as it comes). A node off
            the control path sets it so that dora wakes it once for the
            messages of that span rather than once per message; a timeout
            passed to ``next_batch`` still bounds the whole wait.
        monotonic, sleep: The clock and the wait of the spacing (injectable
            for tests).
    """

    def __init__(self, node: Any, ends_with: Iterable[str] | None = None, batch_spacing_s: float = 0.0,
                 monotonic: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
        if not 0.0 <= batch_spacing_s <= MAX_BATCH_SPACING_S:
            raise ValueError(f"batch_spacing_s must be within 0..{MAX_BATCH_SPACING_S:g} s, got {batch_spacing_s}")
        self.node = node
        self.batch_spacing_s = batch_spacing_s
        self._monotonic = monotonic
        self._sleep = sleep
        self._last_batch_at: float | None = None
        self.ends_with = None if ends_with is None else frozenset(ends_with)
        self.closed: set[str] = set()
        self.finished = False
        self.channel_closed = False  # dora raised: its event channel is gone
        # read from the environment at the first batch, not at every one: the
        # node config is a few kB of text that every lookup decodes and hashes
        self._ending: frozenset[str] | None = None
        self._data_inputs: frozenset[str] | None = None

    @property
    def data_inputs(self) -> frozenset[str]:
        """:func:`data_inputs`, read once per stream."""
        if self._data_inputs is None:
            self._data_inputs = data_inputs()
        return self._data_inputs

    def next_batch(self, timeout_s: float | None = None, ending: frozenset[str] | None = None,
                   max_events: int | None = None) -> list[Mapping[str, Any]] | None:
        """Blocks for the next event (at most ``timeout_s``; 0 only takes what
        is queued), then takes whatever else is already queued: all of it, or
        at most ``max_events`` events in all (the rest stays queued for the
        next call, so a node far behind still gets back to its own work, a
        flush or a heartbeat, between slices of its backlog; dora converts
        every event it hands over, so one unbounded take of a long queue is
        one long call).

        Returns None at end of stream. A node whose ending inputs have closed
        also reaches the end, even while dora timers would keep ticking:
        upstream is gone, so a control node finishes (and its device stops)
        instead of running on forever. ``ending`` names those inputs for this
        call instead. A timeout yields an empty list."""
        if self.finished:
            return None
        if max_events is not None and max_events < 1:
            raise ValueError(f"max_events must be >= 1, got {max_events}")
        timeout_s = self._wait_out_spacing(timeout_s)
        first = self.node.next(timeout_s) if timeout_s is not None else self.node.next()
        if first is None:
            self.finished = True
            return None
        rest = self._drain() if max_events is None else self._take(max_events - 1)
        if self.batch_spacing_s > 0:
            self._last_batch_at = self._monotonic()
        batch = self._close_batch([first] + rest, ending)
        if self.finished and max_events is not None and not self.channel_closed:
            # the stream ends in this slice: what is still queued behind it is
            # the producers' last data (dora can deliver an input's close ahead
            # of it), taken here as an unsliced batch would have
            batch += [ev for ev in self._drain() if not _is_timeout(ev)]
        return batch

    def _wait_out_spacing(self, timeout_s: float | None) -> float | None:
        """Sleeps what is left of the spacing since the last batch was taken (at
        most ``timeout_s``) and returns what is left of ``timeout_s``."""
        if self._last_batch_at is None:
            return timeout_s
        wait = self._last_batch_at + self.batch_spacing_s - self._monotonic()
        if timeout_s is not None:
            wait = min(wait, timeout_s)
        if wait <= 0:
            return timeout_s
        self._sleep(wait)
        return None if timeout_s is None else max(0.0, timeout_s - wait)

    def _take(self, limit: int) -> list[Mapping[str, Any]]:
        """Up to ``limit`` queued events, one ``try_recv`` each, without waiting."""
        out: list[Mapping[str, Any]] = []
        try:
            while len(out) < limit:
                event = self.node.try_recv()
                if event is None:  # nothing queued now (or the stream's end: next() tells)
                    break
                out.append(event)
        except RuntimeError:
            # as for drain: dora raises once the event channel has closed
            self.finished = self.channel_closed = True
        return out

    def poll(self) -> list[Mapping[str, Any]] | None:
        """Takes only what is already queued, without waiting (an empty list when
        nothing is): for a node that paces itself and checks for STOP between its
        own steps. Cheaper than ``next_batch(0)``, for which dora arms a timer
        and reports its expiry as an error event. Returns None at end of stream."""
        if self.finished:
            return None
        batch = self._drain()
        if not batch:
            return None if self.finished else []
        return self._close_batch(batch, None)

    def _drain(self) -> list[Mapping[str, Any]]:
        try:
            return list(self.node.drain() or [])
        except RuntimeError:
            # dora raises once the event channel has closed: nothing more will come
            self.finished = self.channel_closed = True
            return []

    def _close_batch(self, batch: list[Mapping[str, Any]], ending: frozenset[str] | None) -> list[Mapping[str, Any]]:
        for ev in batch:
            if ev.get("type") == "INPUT_CLOSED":
                self.closed.add(ev.get("id"))
        if ending is None:
            if self.ends_with is not None:
                ending = self.ends_with
            else:
                if self._ending is None:
                    self._ending = ending_inputs()
                ending = self._ending
        if ending and ending <= self.closed:
            self.finished = True
        return [ev for ev in batch if not _is_timeout(ev)]
