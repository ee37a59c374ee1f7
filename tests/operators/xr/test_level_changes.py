"""The level-change selection of XR reports (operators/xr/level_changes.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.teleop.episode_marker import EpisodeMarker
from teledora.operators.xr.level_changes import HAND_LEVELS, TOP_LEVELS, LevelChanges, levels

MS = 1_000_000


def report(ui=(), left=(), right=(), connected=True, **analog):
    """A report holding every level (named ones up) and some analog values."""
    def hand(up):
        return {"connected": connected, **{n: n in up for n in HAND_LEVELS if n != "connected"},
                "trigger": analog.get("trigger", 0.0), "stick": [0.0, 0.0]}
    return {**{n: n in ui for n in TOP_LEVELS}, "left": hand(left), "right": hand(right), "seq": analog.get("seq", 0)}


def test_levels_are_every_boolean_field_of_the_report():
    assert {"focused", "ui_estop", "ui_episode_start", "ui_episode_keep", "ui_episode_discard"} <= set(TOP_LEVELS)
    assert set(HAND_LEVELS) == {"connected", "pose_valid", "primary", "secondary", "stick_click", "menu"}
    assert len(levels(report())) == len(TOP_LEVELS) + 2 * len(HAND_LEVELS)


def test_a_change_is_due_analog_motion_is_not_and_a_heartbeat_comes_once_a_second():
    c = LevelChanges()
    assert c.due(report(), 0)  # the first report
    assert not c.due(report(trigger=0.7, seq=1), 11 * MS)  # analog only
    assert c.due(report(left=("primary",)), 22 * MS)  # a press
    assert not c.due(report(left=("primary",)), 33 * MS)
    assert c.due(report(), 44 * MS)  # the release
    assert c.due(report(connected=False), 55 * MS)
    assert not c.due(report(connected=False), 55 * MS + 999 * MS)
    assert c.due(report(connected=False), 55 * MS + 1000 * MS)  # heartbeat
    assert c.due(report(ui=("ui_episode_keep",)), 55 * MS + 1001 * MS)


def test_a_heartbeat_period_must_be_positive():
    with pytest.raises(ValueError):
        LevelChanges(0)


_STEP = st.tuples(
    st.sets(st.sampled_from(["primary", "secondary"])), st.sets(st.sampled_from(["primary", "secondary"])),
    st.booleans(), st.sets(st.sampled_from(["ui_episode_start", "ui_episode_keep", "ui_episode_discard"])),
    st.integers(1, 400),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_STEP, max_size=60))
def test_the_episode_marker_fed_only_due_reports_marks_exactly_what_the_full_stream_marks(steps):
    """The episodes node takes the level-change topic instead of every report:
    with its 100 ms tick (``state``) it makes the same marks and states."""
    full, changes_only = EpisodeMarker("t", 5.0), EpisodeMarker("t", 5.0)
    picker = LevelChanges()
    t = 0
    next_tick = 100 * MS
    for left, right, connected, ui, dt_ms in steps:
        t += dt_ms * MS
        while next_tick <= t:
            assert full.state(next_tick) == changes_only.state(next_tick)
            next_tick += 100 * MS
        msg = report(ui=ui, left=left, right=right, connected=connected)
        full.on_controllers(msg, t)
        if picker.due(msg, t):
            changes_only.on_controllers(msg, t)
        assert full.take_marks() == changes_only.take_marks()
        assert full.state(t) == changes_only.state(t)
