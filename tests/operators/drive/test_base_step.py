"""The base node's decisions without dora: limits, watchdog, hold, odometry."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teledora import models
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.base_command_limits import BaseCommandLimits
from teledora.operators.drive.base_step import WATCHDOG_STOP, BaseStep
from teledora.operators.drive.command_limits import CommandRejected
from teledora.operators.drive.omni_drive import BodyTwist, OmniDrive, WheelTicks

PROFILE = models.load_profile()
CONFIG = load_drive_config().base
TIMEOUT_NS = int(round(CONFIG.watchdog_timeout_s * 1e9))
DRIVE = OmniDrive(CONFIG.geometry)
ZERO = WheelTicks(0, 0, 0)


def step() -> BaseStep:
    return BaseStep(CONFIG, BaseCommandLimits.from_profile(PROFILE), "odom", "base_link")


def cmd(f: float, l: float = 0.0, w: float = 0.0, stamp: int = 0) -> dict:
    return {"stamp_ns": stamp, "forward_m_s": f, "left_m_s": l, "yaw_rad_s": w}


def test_a_command_drives_the_wheels_until_the_watchdog_expires():
    s = step()
    assert s.goals(0, hold=False) == ZERO  # nothing received yet
    s.command(cmd(0.2, 0.0, 0.3), 0)
    assert s.goals(TIMEOUT_NS, hold=False) == DRIVE.body_to_wheel_raw(0.2, 0.0, 0.3)
    assert s.status(TIMEOUT_NS) == ("ok", "")
    assert s.goals(TIMEOUT_NS + 1, hold=False) == ZERO
    assert s.status(TIMEOUT_NS + 1) == ("warn", WATCHDOG_STOP)
    assert s.watchdog.trips == 1


def test_a_hold_zeroes_the_twist_until_a_new_command():
    s = step()
    s.command(cmd(0.1), 0)
    assert s.goals(1, hold=True) == ZERO
    assert s.goals(2, hold=False) == ZERO  # the hold's zero stands: no command since
    s.command(cmd(0.1), 3)
    assert s.goals(4, hold=False) == DRIVE.body_to_wheel_raw(0.1, 0.0, 0.0)


def test_a_rejected_command_keeps_the_last_valid_one_and_does_not_feed_the_watchdog():
    s = step()
    s.command(cmd(0.1), 0)
    with pytest.raises(CommandRejected):
        s.command(cmd(math.nan), TIMEOUT_NS)
    assert s.goals(TIMEOUT_NS, hold=False) == DRIVE.body_to_wheel_raw(0.1, 0.0, 0.0)
    assert s.goals(TIMEOUT_NS + 1, hold=False) == ZERO
    assert s.limits.counts()["rejected"] == 1


def test_an_over_cap_command_is_clamped_and_used_at_the_cap():
    s = step()
    bounded = s.command(cmd(10 * PROFILE.base.max_linear_m_s / 2), 0)
    assert [c.quantity for c in bounded.clamps] == ["linear speed"]
    assert s.goals(0, hold=False) == DRIVE.body_to_wheel_raw(PROFILE.base.max_linear_m_s, 0.0, 0.0)


def test_a_command_counts_from_its_stamp_not_from_when_it_came_out_of_a_queue():
    s = step()
    s.command(cmd(0.1, stamp=1), TIMEOUT_NS + 2)
    assert s.goals(TIMEOUT_NS + 2, hold=False) == ZERO


def test_the_report_integrates_the_measured_wheels_in_the_profile_frames():
    s = step()
    goals = DRIVE.body_to_wheel_raw(0.2, 0.0, 0.0)
    s.measured(0, goals, goals)
    report = s.measured(10**9, goals, goals)
    twist = DRIVE.wheel_raw_to_body(*goals)
    assert (report.odom["frame_id"], report.odom["child_frame_id"]) == ("odom", "base_link")
    assert report.odom["x"] == pytest.approx(twist.forward_m_s)
    assert report.wheel_commands == {"stamp_ns": 10**9, "left": goals.left, "back": goals.back, "right": goals.right}
    assert report.details == {"watchdog_trips": 0, "wheels": list(goals), "measured": list(goals)}


V, W = PROFILE.base.max_linear_m_s, PROFILE.base.max_yaw_rad_s
events = st.lists(st.one_of(
    st.tuples(st.just("cmd"), st.floats(-20 * V, 20 * V), st.floats(-20 * W, 20 * W), st.integers(0, 2 * TIMEOUT_NS)),
    st.tuples(st.just("tick"), st.booleans(), st.just(0.0), st.integers(0, 2 * TIMEOUT_NS)),
), max_size=40)


@given(events)
def test_the_wheels_only_move_at_the_last_valid_command_while_it_is_fresh_and_nothing_held(history):
    """Over any history: a tick's goals are the quantized last accepted command
    if it is within the watchdog timeout and no hold or expiry came since;
    otherwise zero."""
    s, reference = step(), BaseCommandLimits.from_profile(PROFILE)
    now, live, fed_at = 0, None, None
    for kind, a, b, dt in history:
        now += dt
        if kind == "cmd":
            try:
                live = reference.bound(BodyTwist(a, 0.0, b)).value
            except CommandRejected:
                with pytest.raises(CommandRejected):
                    s.command(cmd(a, 0.0, b), now)
                continue
            s.command(cmd(a, 0.0, b), now)
            fed_at = now
        else:
            if a or fed_at is None or now - fed_at > TIMEOUT_NS:
                live = None
            expected = ZERO if live is None else DRIVE.body_to_wheel_raw(*live)
            assert s.goals(now, hold=a) == expected
