"""Episodes from the operator's start / keep / discard marks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from teledora.operators.datasets.episodes import EVENTS, EpisodeMark, split_episodes


def m(t, event, task=""):
    return EpisodeMark(t, event, task)


def test_no_marks_is_the_whole_run():
    s = split_episodes([], 0, 100, "teleop")
    assert [(e.start_ns, e.end_ns, e.task, e.closed_by) for e in s.episodes] == [(0, 100, "teleop", "whole run")]


def test_start_keep_discard_and_open_at_end():
    s = split_episodes([m(10, "start", "a"), m(20, "keep"), m(25, "keep"), m(30, "start", "b"), m(40, "discard"),
                        m(50, "start"), m(60, "start", "c"), m(70, "bogus")], 0, 100, "dflt")
    assert [(e.start_ns, e.end_ns, e.task, e.closed_by) for e in s.episodes] == [
        (10, 20, "a", "keep"), (50, 60, "dflt", "start"), (60, 100, "c", "end of run")]
    assert [(e.start_ns, e.end_ns, e.task) for e in s.discarded] == [(30, 40, "b")]
    assert [x.event for x in s.ignored] == ["keep", "bogus"]


@given(st.lists(st.tuples(st.integers(0, 1000), st.sampled_from(EVENTS)), max_size=30))
def test_episodes_never_overlap_and_stay_in_the_run(marks):
    s = split_episodes([m(t, e) for t, e in marks], 0, 1000, "x")
    spans = sorted((e.start_ns, e.end_ns) for e in s.episodes + s.discarded)
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert a1 <= b0
    assert all(0 <= a <= b <= 1000 for a, b in spans)
    starts = sum(1 for _, e in marks if e == "start")
    assert len(s.episodes) + len(s.discarded) == (starts if marks else 1)
