"""The lift node's decisions without dora: homing, limits, watchdog, goal writes."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teledora import models
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.command_limits import CommandRejected
from teledora.operators.drive.lift_axis import HomingPhase
from teledora.operators.drive.lift_command_limits import LiftCommandLimits
from teledora.operators.drive.lift_step import LiftStep

CFG = load_drive_config().lift
PROFILE = models.load_profile()
POLL_NS = int(CFG.home_poll_period_s * 1e9)
SETTLE_NS = int(CFG.home_settle_s * 1e9)
FLOOR_RAW = 2000
TIMEOUT_NS = int(round(CFG.watchdog_timeout_s * 1e9))


def cmd(v: float, stamp: int = 0) -> dict:
    return {"stamp_ns": stamp, "velocity_m_s": v}


def new_step() -> LiftStep:
    return LiftStep(CFG, LiftCommandLimits.from_profile(PROFILE), FLOOR_RAW)


def homed_step() -> tuple[LiftStep, int]:
    """A step homed against a servo stalled at ``FLOOR_RAW``; returns it and the time."""
    s = new_step()
    s.start()
    now = 0
    s.wait_poll_period(now)
    while s.homing_active:
        now += POLL_NS if s.homing.phase is HomingPhase.DRIVING_DOWN else SETTLE_NS
        assert s.poll_due(now)
        s.homing_poll(FLOOR_RAW, 0, now)
    assert s.homed
    return s, now


def test_homing_polls_once_a_period():
    s = new_step()
    action = s.start()
    assert (action.goal_velocity_raw, action.torque_enable) == (CFG.home_speed_ticks_s, True)
    s.wait_poll_period(100)
    assert not s.poll_due(100 + POLL_NS - 1)
    assert s.poll_due(100 + POLL_NS)
    s.homing_poll(FLOOR_RAW, 0, 100 + POLL_NS)
    assert not s.poll_due(100 + 2 * POLL_NS - 1)


def test_commands_while_homing_are_bounded_counted_and_not_used():
    s = new_step()
    s.start()
    with pytest.raises(CommandRejected):
        s.command(cmd(math.inf), 0)
    s.command(cmd(0.01), 0)
    assert (s.ignored, s.velocity_cmd) == (1, 0.0)
    assert s.unhomed_state(5) == {"stamp_ns": 5, "height_m": 0.0, "velocity_m_s": 0.0, "homed": False}


def test_a_homed_lift_follows_the_command_until_the_watchdog_expires():
    s, now = homed_step()
    assert not s.commands_fresh(now)  # nothing received since homing
    s.command(cmd(0.02), now)
    up = s.drive(now, FLOOR_RAW, 0, alive=s.commands_fresh(now))
    assert up.goal_raw == s.axis.velocity_goal_raw(0.02) != 0
    assert up.state == {"stamp_ns": now, "height_m": 0.0, "velocity_m_s": 0.0, "homed": True}
    assert s.drive(now + 1, FLOOR_RAW, 0, alive=True).goal_raw is None  # unchanged: nothing written
    later = now + TIMEOUT_NS + 1
    stop = s.drive(later, FLOOR_RAW, 0, alive=s.commands_fresh(later))
    assert stop.goal_raw == 0
    assert stop.details["watchdog_trips"] == 1


def test_a_rejected_command_keeps_the_last_valid_one():
    s, now = homed_step()
    s.command(cmd(0.02), now)
    with pytest.raises(CommandRejected):
        s.command(cmd(math.nan), now)
    assert s.velocity_cmd == 0.02
    assert s.limits.counts()["rejected"] == 1


speeds = st.floats(-2 * PROFILE.lift.max_speed_m_s, 2 * PROFILE.lift.max_speed_m_s)


@given(st.lists(st.tuples(speeds, st.booleans()), max_size=30))
def test_the_servo_always_holds_the_goal_of_the_tick_and_is_written_only_on_a_change(history):
    s, now = homed_step()
    written = None
    for v, alive in history:
        s.command(cmd(v), now)
        tick = s.drive(now, FLOOR_RAW, 0, alive)
        goal = s.axis.velocity_goal_raw(s.velocity_cmd if alive else 0.0)
        assert tick.goal_raw == (None if goal == written else goal)
        written = goal if tick.goal_raw is not None else written
        assert written == goal
        now += 1
