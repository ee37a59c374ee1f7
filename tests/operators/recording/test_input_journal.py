"""Input journals: written from batches and clock reads, followed back exactly."""

from __future__ import annotations

import itertools

import pytest

from teledora.operators.recording.input_journal import (
    TICK_SEQ,
    JournalChunk,
    JournalError,
    JournalFollower,
    JournalStep,
    JournalWriter,
    event_seq,
    join_chunks,
)
from teledora.operators.contract.messages import decode, encode


def ev(input_id: str, seq: int | None = None, value: str = "") -> dict:
    meta = {} if seq is None else {"seq": seq}
    return {"type": "INPUT", "id": input_id, "value": value or f"{input_id}{seq}", "metadata": meta}


def tick(input_id: str) -> dict:
    return {"type": "INPUT", "id": input_id, "value": "made-up tick", "metadata": {}}


def test_event_seq_reads_the_publisher_counter_and_ticks_have_none() -> None:
    assert event_seq(ev("a", 5)) == 5
    assert event_seq(ev("tick")) == TICK_SEQ
    assert event_seq({"type": "INPUT", "id": "a", "metadata": {"seq": True}}) == TICK_SEQ
    assert event_seq({"type": "INPUT", "id": "a", "metadata": {"seq": -3}}) == TICK_SEQ


def write_journal() -> tuple[list[JournalStep], dict[str, int]]:
    clock = itertools.count(100, 10).__next__
    w = JournalWriter("n", clock)
    w.read()  # a read before the first batch belongs to step 0
    w.begin_step([ev("a", 0), ev("tick"), {"type": "STOP"}])
    w.read(), w.read()
    w.begin_step([ev("a", 2), ev("b", 0)])
    w.read()
    first = w.take_chunk({"out": 3})
    w.begin_step([ev("tick")])
    w.end()
    second = w.take_chunk({"out": 4})
    assert w.take_chunk({"out": 4}) is None
    assert first.first_step == 0 and len(first.steps) == 2 and second.first_step == 2
    return join_chunks([second, first])


def test_writer_records_batches_and_reads_step_by_step() -> None:
    steps, counts = write_journal()
    assert [s.events for s in steps] == [[], [("a", 0), ("tick", TICK_SEQ)], [("a", 2), ("b", 0)], [("tick", TICK_SEQ)]]
    assert [s.clock_ns for s in steps] == [[100], [110, 120], [130], []]
    assert counts == {"out": 4}


def test_chunks_survive_the_message_contract() -> None:
    clock = itertools.count(1_800_000_000_000_000_000).__next__
    w = JournalWriter("ik", clock)
    w.begin_step([ev("arm_targets", 9), ev("tick")])
    w.read()
    w.end()
    chunk = w.take_chunk({"joint_commands": 1, "diagnostics": 0})
    back = JournalChunk.from_message(decode("InputJournal", encode("InputJournal", chunk.to_message(5))))
    assert back == chunk


def test_a_lost_chunk_ends_the_usable_journal_and_overlap_is_an_error() -> None:
    a = JournalChunk("n", 0, (JournalStep(), JournalStep([("a", 0)])), {"o": 1})
    c = JournalChunk("n", 5, (JournalStep(),), {"o": 9})
    steps, counts = join_chunks([c, a])
    assert len(steps) == 2 and counts == {"o": 1}
    with pytest.raises(JournalError, match="overlap"):
        join_chunks([a, JournalChunk("n", 1, (JournalStep(),), {})])


def test_follower_regroups_arrivals_into_the_recorded_batches() -> None:
    steps, _ = write_journal()
    f = JournalFollower(steps, tick)
    assert f.read() == 100  # the start's read
    # everything arrives in one lump, with an extra message and real ticks
    for e in [ev("a", 0), ev("a", 1), ev("tick"), ev("b", 0), ev("a", 2)]:
        f.offer(e)
    first = f.take()
    assert [(e["id"], e["value"]) for e in first] == [("a", "a0"), ("tick", "made-up tick")]
    assert (f.read(), f.read()) == (110, 120)
    second = f.take()
    assert [(e["id"], e["value"]) for e in second] == [("a", "a2"), ("b", "b0")]
    assert f.read() == 130
    assert [e["value"] for e in f.take()] == ["made-up tick"]
    assert f.finished and not f.ready()
    f.end()
    assert f.report.skipped_events == 1  # a1: the live node never saw it
    assert (f.report.extra_clock_reads, f.report.unread_clock_values, f.report.missing) == (0, 0, "")
    assert f.read() is None  # after the journal: the real clock


def test_follower_waits_for_late_events_and_says_what_never_came() -> None:
    steps, _ = write_journal()
    f = JournalFollower(steps, tick)
    assert not f.ready() and f.blocker() == ("a", 0)
    f.offer(ev("a", 0))
    f.take()
    f.offer(ev("b", 0))
    assert f.blocker() == ("a", 2)
    f.offer(ev("a", 3))  # a2 was lost: it can never come now
    assert f.blocker() == ("a", 2) and "a seq 2 never arrived" in f.report.missing
    assert not f.ready()
    with pytest.raises(JournalError):
        f.take()


def test_follower_counts_clock_reads_that_differ_from_the_journal() -> None:
    steps, _ = write_journal()
    f = JournalFollower(steps, tick)
    for e in [ev("a", 0), ev("a", 2), ev("b", 0)]:
        f.offer(e)
    f.read()
    f.take()
    assert f.read() == 110
    f.take()  # one of step 1's two values never read
    assert f.read() == 130 and f.read() == 130  # one read too many: the last value again
    assert (f.report.unread_clock_values, f.report.extra_clock_reads) == (1, 1)


def test_an_empty_journal_cannot_be_followed() -> None:
    with pytest.raises(JournalError):
        JournalFollower([], tick)
