"""Replay timing: recorded send times onto wall time."""

from __future__ import annotations

import pytest

from teledora.operators.replay_schedule import ReplaySchedule, ReplaySpeedError


def test_original_timing_and_speed_scaling():
    s = ReplaySchedule(run_t0_ns=1_000, start_ns=50_000, speed=1.0)
    assert s.due_ns(1_000) == 50_000 and s.due_ns(3_000) == 52_000
    fast = ReplaySchedule(run_t0_ns=1_000, start_ns=50_000, speed=4.0)
    assert fast.due_ns(5_000) == 51_000


def test_speed_zero_never_waits():
    s = ReplaySchedule(run_t0_ns=0, start_ns=7, speed=0.0)
    assert s.due_ns(10**12) == 7


def test_shift_moves_the_next_loop():
    s = ReplaySchedule(0, 100, 1.0).shifted(1_000)
    assert s.due_ns(10) == 1_110


def test_negative_speed_is_refused():
    with pytest.raises(ReplaySpeedError):
        ReplaySchedule(0, 0, -0.5)
