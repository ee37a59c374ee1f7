"""The node runtime shared by every teledora node: reading events, contract
codecs bound to a dora node, diagnostics publishing and input journals.

A node builds one :class:`NodeIO` around its ``dora.Node`` (or a
``dora.testing.MockNode`` in tests) and reads its events only through it
(``io.next_batch()``, ``io.newest()``), decodes inputs, sends contract
messages and publishes ``diagnostics`` about once a second.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any, Callable, Iterable, Mapping, NoReturn

import pyarrow as pa

from teledora.operators.contract.diagnostics import Diagnostics
from teledora.operators.contract.message_limits import MessageLimits
from teledora.operators.contract.messages import MessageError, decode, encode
from teledora.operators.errors import ConfigError
from teledora.operators.recording.recorder_watch import DEFAULT_MAX_LAG_S, DEFAULT_TIMEOUT_S, RecorderWatch
from teledora.runtime.event_stream import EventStream, batch_spacing_from_env, data_inputs, newest_per_input
from teledora.runtime.library_backtraces import without_library_backtraces

RECORDER_INPUT = "recorder_status"


def load_message_limits() -> MessageLimits:
    """The message limits of the robot this node runs for (``TELEDORA_PROFILE``)."""
    from teledora import models
    from teledora.models.config_files import load_node_profile

    profile = load_node_profile()
    return MessageLimits.for_robot(profile, models.path(profile.model).read_text())
RECORDER_GUARD_ENV = "TELEDORA_RECORDER_GUARD"


def recorder_watch_from_env(inputs: Iterable[str]) -> RecorderWatch | None:
    """The node's :class:`RecorderWatch`, when its dataflow wires the
    recorder's heartbeat into it (input ``recorder_status``) and
    ``TELEDORA_RECORDER_GUARD`` is not ``off``. ``TELEDORA_RECORDER_TIMEOUT_S``
    and ``TELEDORA_RECORDER_MAX_LAG_S`` set its bounds."""
    mode = os.environ.get(RECORDER_GUARD_ENV, "hold").strip().lower()
    if RECORDER_INPUT not in set(inputs) or mode == "off":
        return None
    if mode != "hold":
        raise ConfigError(f"{RECORDER_GUARD_ENV} must be 'hold' or 'off', got {mode!r}")
    return RecorderWatch(
        float(os.environ.get("TELEDORA_RECORDER_TIMEOUT_S", DEFAULT_TIMEOUT_S)),
        float(os.environ.get("TELEDORA_RECORDER_MAX_LAG_S", DEFAULT_MAX_LAG_S)),
    )


def node_id(default: str) -> str:
    """This node's id in the dataflow (from the config dora hands the node), else ``default``."""
    match = re.search(r"^node_id: *(\S+)", os.environ.get("DORA_NODE_CONFIG", ""), re.MULTILINE)
    return match.group(1) if match else default


def make_node(node: Any = None) -> Any:
    """The injected node (tests) or a real ``dora.Node`` (under a daemon),
    with Rust library backtraces off unless the environment asks for them
    (:mod:`teledora.runtime.library_backtraces`)."""
    if node is not None:
        return node
    without_library_backtraces(os.environ)
    from dora import Node

    return Node()


class NodeIO:
    """Binds the event stream, the message contract and diagnostics to one dora node.

    Every message sent carries the dora metadata ``seq``: a counter per output
    starting at 0, which names the message for gap detection and input journals.

    Args:
        node: ``dora.Node`` or ``dora.testing.MockNode``.
        name: Node id used in diagnostics and logs.
        clock: Returns host time in ns (injectable for tests).
        journal: Journal the node's input batches and clock reads on the
            ``journal`` output (and follow a recorded journal when
            ``TELEDORA_FOLLOW_JOURNAL`` is set); the node reads the time
            with :meth:`now`.
        ends_with: Inputs whose closing ends the node's stream (see
            :class:`~teledora.runtime.event_stream.EventStream`); None applies
            ``TELEDORA_ENDS_WITH`` or every data input, an empty set makes a
            source node that runs until STOP.
    """

    def __init__(self, node: Any, name: str, clock=time.time_ns, journal: bool = False,
                 ends_with: Iterable[str] | None = None) -> None:
        self.node = node
        self.name = name
        self.clock = clock
        self.diag = Diagnostics(name)
        self.sent_per_output: dict[str, int] = {}
        try:
            spacing_s = batch_spacing_from_env()
        except ValueError as exc:
            raise ConfigError(f"{name}: {exc}") from None
        self.stream = EventStream(node, ends_with, batch_spacing_s=spacing_s)
        self.recorder_watch = recorder_watch_from_env(data_inputs())
        self.recording_hold_reason = ""
        self._limits: MessageLimits | None = None
        self._limits_now: int | None = None  # the clock value stamps are checked against, per batch
        self.scheduling = self._schedule(node)
        self.journal = None
        if journal:
            from teledora.runtime.node_journal import NodeJournal, follow_run_from_env

            self.journal = NodeJournal(self, follow_run_from_env())

    def _schedule(self, node: Any) -> Any:
        """Real-time scheduling for a control-path node (scheduling.yaml), only
        for a real dora node: a test's MockNode shares the test's process."""
        from dora import Node

        if not isinstance(node, Node):
            return None
        from teledora.runtime.realtime import apply_node_scheduling, load_scheduling

        try:
            table = load_scheduling()
        except (OSError, ValueError) as exc:
            self.fail_start("scheduling", exc)
        if table is None or table.for_node(self.name) is None:
            from teledora.runtime.realtime import time_share

            time_share()
            return None

        def demoted(report: Any) -> None:
            self.diag.error(report.problem)
            self.diag.set_status("error", report.problem)
            self.diag.runtime_details["scheduling"] = report.as_details()
            self.log("error", report.problem)

        report = apply_node_scheduling(table.for_node(self.name), table.cpu_budget_ms, demoted)
        self.diag.runtime_details["scheduling"] = report.as_details()
        if report.problem:  # said once, like the recorder's priority; the node runs on unprioritised
            self.log("warn", report.problem)
        return report

    def now(self) -> int:
        """The time now (host ns); journaled, or replayed from a journal."""
        return self.journal.now() if self.journal is not None else self.clock()

    def next_batch(self, timeout_s: float | None = None, max_events: int | None = None) -> list[Mapping[str, Any]] | None:
        """The next batch of events: blocks for one (at most ``timeout_s``; 0
        only takes what is queued), then takes whatever else is queued (at
        most ``max_events`` in all, when given).

        Returns None at end of stream (see
        :meth:`~teledora.runtime.event_stream.EventStream.next_batch`); a
        timeout yields an empty list. A journaled node's batches go through its
        journal, which keeps each batch whole, so it reads without a timeout.

        Raises:
            ValueError: a timeout on a journaled node.
        """
        self._limits_now = None
        if self.journal is not None:
            if timeout_s is not None or max_events is not None:
                raise ValueError(f"{self.name}: a journaled node reads its batches whole and without a timeout")
            return self.journal.next_batch()
        batch = self.stream.next_batch(timeout_s, max_events=max_events)
        if batch is None or self.recorder_watch is None:
            return batch
        return self._take_recorder_status(batch)

    def poll(self) -> list[Mapping[str, Any]] | None:
        """The events already queued, without waiting (see
        :meth:`~teledora.runtime.event_stream.EventStream.poll`); None at end
        of stream. Not for a journaled node (its batches are its journal's)."""
        if self.journal is not None:
            raise ValueError(f"{self.name}: a journaled node reads whole batches through next_batch")
        self._limits_now = None
        batch = self.stream.poll()
        if batch is None or self.recorder_watch is None:
            return batch
        return self._take_recorder_status(batch)

    def _take_recorder_status(self, batch: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
        """Feeds the recorder's heartbeats to the watch; the node never sees them."""
        kept = []
        for event in batch:
            if event.get("id") != RECORDER_INPUT:
                kept.append(event)
            elif event.get("type") == "INPUT":
                try:
                    status = decode("RecorderStatus", event["value"], self.limits, self.clock())
                except MessageError as exc:
                    self.reject(f"input {RECORDER_INPUT!r}: {exc}", exc.reason)
                    continue
                self.recorder_watch.feed(status, self.clock())
            elif event.get("type") == "INPUT_CLOSED":
                self.recorder_watch.closed()
        return kept

    def recording_hold(self, now_ns: int) -> bool:
        """True when the robot must hold because its run is not being recorded
        (see :mod:`teledora.operators.recording.recorder_watch`); always False
        for a node without the ``recorder_status`` input or with
        ``TELEDORA_RECORDER_GUARD=off``. The first hold of a spell is logged as
        an error and raises the diagnostics level; the release is logged."""
        if self.recorder_watch is None:
            return False
        before = self.recorder_watch.kind
        reason = self.recorder_watch.hold_reason(now_ns)
        kind = self.recorder_watch.kind
        if reason and kind != before:  # one line per spell and per change of cause
            starting = kind == "starting"
            if not starting:
                self.diag.error(f"holding: {reason}")
            self.log("warn" if starting else "error", f"SAFE STOP, robot holds: {reason}")
        elif not reason and before:
            self.log("info", "recorder caught up: commands applied again")
        self.recording_hold_reason = reason
        if reason:
            self.diag.set_status("error", f"safe stop: {reason}")
        return bool(reason)

    @staticmethod
    def newest(batch: Iterable[Mapping[str, Any]], latest_only: set[str]) -> list[Mapping[str, Any]]:
        """The batch with only the newest event of each input in ``latest_only``
        (see :func:`~teledora.runtime.event_stream.newest_per_input`)."""
        return newest_per_input(batch, latest_only)

    def _metadata(self, output: str, metadata: Mapping[str, Any] | None) -> dict[str, Any]:
        meta = dict(metadata or {})
        meta["seq"] = self.sent_per_output.get(output, 0)
        return meta

    def _count(self, output: str) -> None:
        self.sent_per_output[output] = self.sent_per_output.get(output, 0) + 1

    @property
    def limits(self) -> MessageLimits:
        """The plausibility limits inputs are held to (the node's robot
        profile and model, read on first use)."""
        if self._limits is None:
            self._limits = load_message_limits()
        return self._limits

    def _stamp_reference(self) -> int:
        """The clock value this batch's stamps are checked against: read once
        per batch, through the journal on a journaled node (so that an exact
        replay makes the same decisions)."""
        if self._limits_now is None:
            self._limits_now = self.now() if self.journal is not None else self.clock()
        return self._limits_now

    def decode(self, event: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
        """Decodes an INPUT event as ``kind`` and holds it to the contract and
        to the message limits (plausible values, the model's joints, stamps
        not ahead of this node's clock). A message that fails is counted by
        reason, logged and dropped: the caller gets None and keeps its last
        state."""
        self.diag.received += 1
        try:
            return decode(kind, event["value"], self.limits, self._stamp_reference())
        except MessageError as exc:
            self.reject(f"input {event.get('id')!r}: {exc}", exc.reason)
            return None

    def reject(self, reason: str, category: str = "contract") -> None:
        """Counts one rejected input (per ``category``, in the diagnostics'
        details) and logs why; the diagnostics level rises to ``warn``."""
        self.diag.reject(reason, category)
        self.log("warn", f"rejected {reason}")

    def clamp(self, reason: str) -> None:
        """Counts an input cut down to a limit before use; logs the first of
        each diagnostics period only (a held stick can clamp every message)."""
        first = self.diag.clamped_since_snapshot() == 0
        self.diag.clamp(reason)
        if first:
            self.log("warn", f"clamped {reason}")

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

    def publish_diagnostics(self, force: bool = False, refresh: Callable[[], None] | None = None) -> None:
        """Sends ``diagnostics`` if a period has passed (or ``force``).

        ``refresh`` (optional) brings ``diag``'s status and details up to date
        and runs only when a snapshot goes out: a node whose details take work
        to gather calls this after every batch without paying for it each time."""
        now = self.now()
        if force or self.diag.due(now):
            if refresh is not None:
                refresh()
            self.node.send_output("diagnostics", encode("Diagnostics", self.diag.snapshot(now)), self._metadata("diagnostics", None))
            self._count("diagnostics")

    def fail_start(self, what: str, exc: BaseException) -> NoReturn:
        """Ends a node that could not start (its configuration, model or device
        would not load): the reason ``"<what> could not start: <exc>"`` becomes
        the diagnostics status (level ``error``) and last error, is logged, and
        goes out at once in a final ``diagnostics``; then the process exits with
        it (``SystemExit``, chained to ``exc``)."""
        reason = f"{what} could not start: {exc}"
        self.diag.set_status("error", reason)
        self.diag.error(reason)
        self.log("error", reason)
        self.publish_diagnostics(force=True)
        raise SystemExit(reason) from exc

    def log(self, level: str, message: str) -> None:
        try:
            self.node.log(level, message)
        except Exception:  # a log call must never take a node down
            print(f"[{self.name}] {level}: {message}", flush=True)
