"""Recorder watch: hold before the first heartbeat, latch on silence or end, hold while behind."""

from __future__ import annotations

import pytest

from teledora.operators.recording.recorder_watch import RecorderWatch

S = 1_000_000_000


def beat(lag_s: float = 0.0, recording: bool = True) -> dict:
    return {"stamp_ns": 0, "recording": recording, "messages": 1, "lag_ns": int(lag_s * S)}


def test_holds_until_the_first_heartbeat_then_moves():
    w = RecorderWatch(timeout_s=1.0, max_lag_s=2.0)
    assert "first heartbeat" in w.hold_reason(0)
    w.feed(beat(), 1 * S)
    assert w.hold_reason(int(1.5 * S)) == ""


def test_silence_past_the_timeout_holds_until_heartbeats_return():
    w = RecorderWatch(timeout_s=1.0, max_lag_s=2.0)
    w.feed(beat(), 0)
    assert w.hold_reason(1 * S) == ""  # exactly the timeout: still alive
    assert "no recorder heartbeat for 1.10 s" in w.hold_reason(int(1.1 * S))
    w.feed(beat(), int(1.2 * S))
    assert w.hold_reason(int(1.2 * S)) == ""  # alive again: its queues kept everything
    assert w.holds == 1


def test_closed_input_latches_even_if_heartbeats_return():
    w = RecorderWatch()
    w.feed(beat(), 0)
    w.closed()
    w.feed(beat(), 1)
    assert "ended" in w.hold_reason(2)


def test_closed_heartbeat_input_latches():
    w = RecorderWatch()
    w.feed(beat(), 0)
    w.closed()
    assert "ended" in w.hold_reason(1)


def test_lag_above_the_bound_holds_only_while_behind():
    w = RecorderWatch(timeout_s=1.0, max_lag_s=2.0)
    w.feed(beat(lag_s=2.5), 0)
    assert "2.50 s behind" in w.hold_reason(0)
    w.feed(beat(lag_s=0.1), int(0.2 * S))
    assert w.hold_reason(int(0.2 * S)) == ""
    w.feed(beat(lag_s=3.0), int(0.4 * S))
    assert w.hold_reason(int(0.4 * S)) != ""
    assert w.holds == 2  # two spells behind


def test_a_recorder_that_reports_it_stopped_latches():
    w = RecorderWatch()
    w.feed(beat(recording=False), 0)
    assert "stopped recording" in w.hold_reason(0)


@pytest.mark.parametrize("timeout_s,max_lag_s", [(0, 1), (1, 0), (-1, 1)])
def test_bounds_must_be_positive(timeout_s, max_lag_s):
    with pytest.raises(ValueError):
        RecorderWatch(timeout_s, max_lag_s)
