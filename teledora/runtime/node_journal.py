"""A node's input journal on dora: written live, followed on an exact replay.

A journaled node (teleop, ik, scan_merger) reads its batches and its clock
through :class:`NodeJournal` (via ``NodeIO.next_batch`` / ``NodeIO.now``):

* live, it publishes its journal on the ``journal`` output (InputJournal, one
  message per ~0.2 s of steps), which the recorder records with the rest;
* with ``TELEDORA_FOLLOW_JOURNAL=<run dir>`` (set by ``teledora replay
  --exact``) it reads its own journal from that run and gets exactly the
  recorded batches and clock values, so its outputs come out byte-equal.
  When the journal is used up the node's stream ends and it prints
  ``journal <id> done: ...``.

See operators/recording/input_journal.py for what a journal holds and why.
"""

from __future__ import annotations

import os
from typing import Any, Mapping

import pyarrow as pa

from teledora.operators.recording.input_journal import (
    TICK_SEQ,
    FollowReport,
    JournalFollower,
    JournalWriter,
    event_seq,
)
from teledora.recording.journal_files import FOLLOW_ENV, JOURNAL_OUTPUT, load_journal

CHUNK_PERIOD_NS = 200_000_000
CHUNK_MAX_STEPS = 1000
DONE_MARKER = "done:"


def _tick(input_id: str) -> Mapping[str, Any]:
    return {"type": "INPUT", "id": input_id, "value": pa.array([], type=pa.null()), "metadata": {}}


class NodeJournal:
    """Journals (or follows the journal of) one node.

    Args:
        io: The node's NodeIO (its event stream, sending and logging).
        follow_run: Run directory whose journal of this node to follow, or None.
    """

    def __init__(self, io: Any, follow_run: str | None) -> None:
        self.io = io
        self.follower: JournalFollower | None = None
        if follow_run:
            steps, _ = load_journal(follow_run, io.name)
            self.follower = JournalFollower(steps, _tick)
            print(f"journal {io.name}: following {len(steps) - 1} batches from {follow_run}", flush=True)
        self.writer = JournalWriter(io.name, self._source_clock)
        self._last_chunk_ns = io.clock()
        self._ended = False
        self._stopping = False
        self._unnumbered: set[str] = set()

    def _source_clock(self) -> int:
        if self.follower is not None:
            value = self.follower.read()
            if value is not None:
                return value
        return self.io.clock()

    def now(self) -> int:
        return self.writer.read()

    def next_batch(self) -> list[Mapping[str, Any]] | None:
        if self._ended:
            return None
        batch = self._follow() if self.follower is not None else self.io.stream.next_batch()
        if batch is None:
            self.writer.end()
            self._send_chunk()
            self._ended = True
            return None
        self._warn_unnumbered(batch)
        self.writer.begin_step(batch)
        # once the dataflow is stopping, every step goes out at once: what a
        # node sends at its very end of a stopped dataflow was seen to be lost
        self._stopping = self._stopping or any(ev.get("type") == "STOP" for ev in batch)
        real_now = self.io.clock()
        if self._stopping or real_now - self._last_chunk_ns >= CHUNK_PERIOD_NS or self.writer.pending_steps >= CHUNK_MAX_STEPS:
            self._send_chunk()
            self._last_chunk_ns = real_now
        return batch

    def _warn_unnumbered(self, batch: list[Mapping[str, Any]]) -> None:
        """Once per input: a data input whose messages carry no ``seq`` is
        journaled like a tick, and an exact replay cannot bring it back."""
        fed = self.io.stream.data_inputs
        for ev in batch:
            input_id = ev.get("id")
            if ev.get("type") == "INPUT" and input_id in fed and input_id not in self._unnumbered and event_seq(ev) == TICK_SEQ:
                self._unnumbered.add(input_id)
                self.io.log("warn", f"input {input_id!r} carries no seq metadata: an exact replay of {self.io.name} "
                                    "cannot reproduce what it sent")

    def _send_chunk(self) -> None:
        counts = {o: n for o, n in self.io.sent_per_output.items() if o != JOURNAL_OUTPUT}
        chunk = self.writer.take_chunk(counts)
        if chunk is not None:
            self.io.send(JOURNAL_OUTPUT, "InputJournal", chunk.to_message(self.io.clock()))

    def _follow(self) -> list[Mapping[str, Any]] | None:
        follower = self.follower
        assert follower is not None
        while not follower.finished and not follower.ready():
            if follower.report.missing:
                break
            # a replay ends when every input has been replayed, not when the
            # live dataflow's command input closes (replayers finish unevenly)
            raw = self.io.stream.next_batch(ending=self.io.stream.data_inputs)
            if raw is None:
                waiting = follower.blocker()
                follower.report.missing = f"inputs ended while waiting for {waiting[0]} seq {waiting[1]}" if waiting else "inputs ended"
                break
            for event in raw:
                follower.offer(event)
        if follower.ready():
            return follower.take()
        follower.end()
        self._report(follower.report)
        return None

    def _report(self, report: FollowReport) -> None:
        exact = not (report.missing or report.extra_clock_reads or report.unread_clock_values)
        text = (f"journal {self.io.name} {DONE_MARKER} {report.steps} batches, "
                f"{report.skipped_events} unjournaled inputs skipped, clock reads +{report.extra_clock_reads}/"
                f"-{report.unread_clock_values}" + (f"; stopped early: {report.missing}" if report.missing else ""))
        print(text, flush=True)
        self.io.log("info" if exact else "warn", text)
        self.io.diag.details["journal_follow"] = {
            "batches": report.steps, "skipped": report.skipped_events, "extra_clock_reads": report.extra_clock_reads,
            "unread_clock_values": report.unread_clock_values, "missing": report.missing,
        }


def follow_run_from_env() -> str | None:
    return os.environ.get(FOLLOW_ENV) or None
