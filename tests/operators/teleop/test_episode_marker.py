"""Episode chords and requests (operators/teleop/episode_marker.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teledora.operators.teleop.episode_marker import EpisodeMarker


def hands(lx=False, ly=False, ra=False, rb=False, connected=True):
    def hand(p, s):
        return {"connected": connected, "primary": p, "secondary": s}
    return {"left": hand(lx, ly), "right": hand(ra, rb)}


def feed(m, seq, t0=0):
    for i, levels in enumerate(seq):
        m.on_controllers(hands(*levels), t0 + i)


UP = (False, False, False, False)


def test_left_chord_starts_then_keeps_on_release():
    m = EpisodeMarker("stack cubes")
    feed(m, [UP, (True, False, False, False), (True, True, False, False), (False, True, False, False), UP])
    assert [(x["event"], x["task"], x["stamp_ns"]) for x in m.take_marks()] == [("start", "stack cubes", 4)]
    assert m.open
    feed(m, [(True, True, False, False), UP], 10)
    assert [x["event"] for x in m.take_marks()] == ["keep"] and not m.open


def test_right_chord_discards_and_reset_chord_marks_nothing():
    m = EpisodeMarker("t")
    m.request("start", 0)
    m.take_marks()
    # the reset chord: all four down, all up, twice
    feed(m, [UP, (True, True, False, False), (True, True, True, True), UP, (True, True, True, True), UP])
    assert m.take_marks() == [] and m.open
    feed(m, [(False, False, True, True), UP], 20)
    assert [x["event"] for x in m.take_marks()] == ["discard"] and not m.open


def test_buttons_down_at_connect_do_not_count():
    m = EpisodeMarker("t")
    feed(m, [(True, True, False, False), UP])
    assert m.take_marks() == []
    feed(m, [(True, True, False, False), (True, True, False, False)], 5)
    m.on_controllers(hands(connected=False), 8)
    feed(m, [UP], 9)
    assert m.take_marks() == []


def test_requests():
    m = EpisodeMarker("t")
    assert not m.request("keep", 1) and m.refused == ["keep: no episode open"]
    assert m.request("start", 2, task="pick")
    assert m.request("start", 3, task="place")
    assert [(x["event"], x["task"]) for x in m.take_marks()] == [("start", "pick"), ("keep", "pick"), ("start", "place")]
    with pytest.raises(ValueError):
        m.request("pause", 4)
    with pytest.raises(ValueError):
        m.request("start", 4, task="  ")


@given(st.lists(st.tuples(st.booleans(), st.booleans(), st.booleans(), st.booleans()), max_size=60))
def test_marks_alternate_and_need_a_chord_release(seq):
    m = EpisodeMarker("t")
    feed(m, seq)
    marks = m.take_marks()
    open_ = False
    for x in marks:
        assert x["event"] != "start" or not open_
        assert x["event"] == "start" or open_
        open_ = x["event"] == "start"
    assert len(marks) <= sum(1 for a, b in zip(seq, seq[1:]) if any(a) and not any(b))
