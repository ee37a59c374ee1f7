"""Input journals: what a node saw, in which grouping, and when it asked the time.

A control node's outputs are a pure function of three things: the messages it
received, how they were grouped into the batches it handled, and the values its
clock returned while it handled them. Only the first is in a recording of the
topics; the grouping and the clock depend on the scheduler. A journal records
the other two, so a replay can feed the node the same batches and the same
clock values and get the same output bytes back. It plays the part of ROS's
``/clock`` topic with ``use_sim_time``, plus the arrival order.

Messages are named by (input id, ``seq``): every contract message carries its
publisher's per-output counter in the dora metadata ``seq``. Timer ticks carry
no counter and are journaled as ``TICK_SEQ``; a replay makes them up again.

:class:`JournalWriter` builds the journal live, :class:`JournalFollower` plays
one back. Both are pure: the caller passes events in and gets steps out.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from teledora.operators.errors import TeledoraError

TICK_SEQ = -1
SEQ_METADATA_KEY = "seq"


def event_seq(event: Mapping[str, Any]) -> int:
    """The publisher's ``seq`` of an INPUT event, or ``TICK_SEQ`` (timers, or a
    sender that does not count its messages)."""
    seq = (event.get("metadata") or {}).get(SEQ_METADATA_KEY)
    if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0:
        return seq
    return TICK_SEQ


@dataclass
class JournalStep:
    """One batch a node handled: its INPUT events and the clock values read
    while handling it. Step 0 is the start, before the first batch."""

    events: list[tuple[str, int]] = field(default_factory=list)
    clock_ns: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class JournalChunk:
    """Consecutive journal steps as one InputJournal message."""

    node: str
    first_step: int
    steps: tuple[JournalStep, ...]
    output_counts: dict[str, int]

    def to_message(self, stamp_ns: int) -> dict[str, Any]:
        return {
            "stamp_ns": int(stamp_ns),
            "node": self.node,
            "first_step": self.first_step,
            "step_events": [len(s.events) for s in self.steps],
            "event_inputs": [i for s in self.steps for i, _ in s.events],
            "event_seqs": [q for s in self.steps for _, q in s.events],
            "step_reads": [len(s.clock_ns) for s in self.steps],
            "clock_ns": [t for s in self.steps for t in s.clock_ns],
            "outputs": list(self.output_counts),
            "output_counts": list(self.output_counts.values()),
        }

    @classmethod
    def from_message(cls, msg: Mapping[str, Any]) -> "JournalChunk":
        """From a decoded InputJournal (the contract checked the list lengths)."""
        inputs, seqs, clock = list(msg["event_inputs"]), [int(v) for v in msg["event_seqs"]], [int(v) for v in msg["clock_ns"]]
        steps, e, c = [], 0, 0
        for n_events, n_reads in zip(msg["step_events"], msg["step_reads"]):
            n_events, n_reads = int(n_events), int(n_reads)
            steps.append(JournalStep(list(zip(inputs[e:e + n_events], seqs[e:e + n_events])), clock[c:c + n_reads]))
            e, c = e + n_events, c + n_reads
        counts = {o: int(n) for o, n in zip(msg["outputs"], msg["output_counts"])}
        return cls(str(msg["node"]), int(msg["first_step"]), tuple(steps), counts)


class JournalWriter:
    """Builds a node's journal while it runs.

    The node reads its clock through :meth:`read`; each new batch starts a step
    (:meth:`begin_step`). Finished steps are handed out in chunks by
    :meth:`take_chunk`, so the journal costs one message per chunk, not per batch.

    Args:
        node: Node id written into each chunk.
        clock: The real clock (host ns).
    """

    def __init__(self, node: str, clock: Callable[[], int]) -> None:
        self.node = node
        self._clock = clock
        self._current = JournalStep()
        self._done: list[JournalStep] = []
        self._next_step = 0  # index of the first step in _done

    def read(self) -> int:
        """The time now, journaled as a read of the current step."""
        now = int(self._clock())
        self._current.clock_ns.append(now)
        return now

    def begin_step(self, events: Iterable[Mapping[str, Any]]) -> None:
        """Closes the current step and opens one for this batch of events."""
        self._done.append(self._current)
        self._current = JournalStep([(ev["id"], event_seq(ev)) for ev in events if ev.get("type") == "INPUT"])

    def end(self) -> None:
        """Closes the last step (the node's stream ended)."""
        self._done.append(self._current)
        self._current = JournalStep()

    @property
    def pending_steps(self) -> int:
        return len(self._done)

    def take_chunk(self, output_counts: Mapping[str, int]) -> JournalChunk | None:
        """The finished steps not yet handed out (None when there are none).
        ``output_counts``: messages sent so far per output, which the steps
        handed out account for."""
        if not self._done:
            return None
        chunk = JournalChunk(self.node, self._next_step, tuple(self._done), dict(output_counts))
        self._next_step += len(self._done)
        self._done = []
        return chunk


class JournalError(TeledoraError, ValueError):
    """A journal that cannot be followed (gaps, or not this node's)."""


def join_chunks(chunks: Sequence[JournalChunk]) -> tuple[list[JournalStep], dict[str, int]]:
    """All steps of a journal in order, and the output counts they account for.

    A chunk lost from the middle (a recording cut short keeps a prefix) ends
    the usable journal there; chunks must not overlap.
    """
    steps: list[JournalStep] = []
    counts: dict[str, int] = {}
    for chunk in sorted(chunks, key=lambda c: c.first_step):
        if chunk.first_step < len(steps):
            raise JournalError(f"journal chunks overlap at step {chunk.first_step}")
        if chunk.first_step > len(steps):
            break
        steps.extend(chunk.steps)
        counts = dict(chunk.output_counts)
    return steps, counts


@dataclass
class FollowReport:
    """How faithfully a journal was followed (all zero: exactly)."""

    steps: int = 0
    skipped_events: int = 0  # arrived but absent from the journal (the live node never saw them)
    extra_clock_reads: int = 0  # the code read the clock more often than the journal holds
    unread_clock_values: int = 0  # ... or less often
    missing: str = ""  # why the journal could not be followed to its end


class JournalFollower:
    """Plays a journal back: regroups the events that arrive into the recorded
    batches and answers clock reads with the recorded values.

    Usage: :meth:`offer` every arriving event; when :meth:`ready`, :meth:`take`
    returns the next batch (ticks made up again). :meth:`read` answers the
    clock for the batch being handled.

    Args:
        steps: The journal (step 0: the start, before any batch).
        make_tick: Builds the event for a journaled tick of an input.
    """

    def __init__(self, steps: Sequence[JournalStep], make_tick: Callable[[str], Mapping[str, Any]]) -> None:
        if not steps:
            raise JournalError("empty journal")
        self._steps = list(steps)
        self._make_tick = make_tick
        self._index = 0  # the step whose clock reads are being answered
        self._reads = 0
        self._buffer: dict[str, deque[tuple[int, Mapping[str, Any]]]] = {}
        self._last_value: int | None = None
        self._ended = False
        self.report = FollowReport()

    @property
    def finished(self) -> bool:
        """Every journaled batch has been handed out."""
        return self._index >= len(self._steps) - 1

    def offer(self, event: Mapping[str, Any]) -> None:
        """Keeps an arriving INPUT event until its step; ticks are dropped (the
        journal says when ticks happened)."""
        if event.get("type") != "INPUT":
            return
        seq = event_seq(event)
        if seq == TICK_SEQ:
            return
        self._buffer.setdefault(event["id"], deque()).append((seq, event))

    def blocker(self) -> tuple[str, int] | None:
        """The first event of the next step that has not arrived (None: ready).
        Sets ``report.missing`` when it never can (a later one of its input came)."""
        if self.finished:
            return None
        position: dict[str, int] = {}
        for input_id, seq in self._steps[self._index + 1].events:
            if seq == TICK_SEQ:
                continue
            queue = self._buffer.get(input_id, ())
            i = position.get(input_id, 0)
            while i < len(queue) and queue[i][0] < seq:
                i += 1  # arrived, but the live node never saw it
            if i == len(queue):
                return (input_id, seq)
            if queue[i][0] > seq:
                self.report.missing = f"{input_id} seq {seq} never arrived (a later message did)"
                return (input_id, seq)
            position[input_id] = i + 1
        return None

    def ready(self) -> bool:
        return not self.finished and self.blocker() is None and not self.report.missing

    def take(self) -> list[Mapping[str, Any]]:
        """The next journaled batch, in the recorded order."""
        if not self.ready():
            raise JournalError("the next journaled batch is not complete")
        self._close_step()
        self._index += 1
        out: list[Mapping[str, Any]] = []
        for input_id, seq in self._steps[self._index].events:
            if seq == TICK_SEQ:
                out.append(self._make_tick(input_id))
            else:
                queue = self._buffer[input_id]
                while queue[0][0] < seq:
                    queue.popleft()
                    self.report.skipped_events += 1
                out.append(queue.popleft()[1])
        return out

    def _close_step(self) -> None:
        recorded = len(self._steps[self._index].clock_ns)
        self.report.unread_clock_values += max(0, recorded - self._reads)
        self.report.steps = self._index
        self._reads = 0

    def end(self) -> None:
        """The node is done with the journal (its last batch, or it gave up)."""
        if not self._ended:
            self._close_step()
            self._ended = True

    def read(self) -> int | None:
        """The recorded clock value for this read. Past the step's recorded
        reads: the last value handed out (counted as a divergence). None once
        the journal has ended, or before any value exists: use the real clock."""
        if self._ended:
            return None
        values = self._steps[self._index].clock_ns
        if self._reads < len(values):
            self._last_value = values[self._reads]
            self._reads += 1
            return self._last_value
        self.report.extra_clock_reads += 1
        return self._last_value
