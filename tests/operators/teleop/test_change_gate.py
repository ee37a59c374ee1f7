"""ChangeGate: a change passes at once, a repeat once a keep-alive period, news always."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from teledora.operators.errors import ConfigError
from teledora.operators.teleop.change_gate import ChangeGate

MS = 1_000_000


def cmd(t_ms: int, forward: float = 0.0) -> dict:
    return {"stamp_ns": t_ms * MS, "forward_m_s": forward, "left_m_s": 0.0, "yaw_rad_s": 0.0}


def test_a_repeat_waits_for_the_keepalive_and_a_change_goes_at_once():
    gate = ChangeGate(0.1)
    sent = [t for t in range(0, 300, 11) if gate.passes("base_cmd", cmd(t), t * MS)]
    assert sent == [0, 110, 220]  # the stamp alone is no change
    assert gate.held == {"base_cmd": 25}
    assert gate.passes("base_cmd", cmd(231, forward=0.2), 231 * MS)  # changed: at once
    assert not gate.passes("base_cmd", cmd(242, forward=0.2), 242 * MS)
    assert gate.passes("base_cmd", cmd(253, forward=0.0), 253 * MS)  # back to rest is a change too


def test_streams_are_gated_apart():
    gate = ChangeGate(0.1)
    assert gate.passes("base_cmd", cmd(0), 0)
    assert gate.passes("lift_cmd", {"stamp_ns": 0, "velocity_m_s": 0.0}, 0)
    assert not gate.passes("base_cmd", cmd(10), 10 * MS)


def test_news_always_passes_and_lists_compare_by_content():
    gate = ChangeGate(0.1)
    state = {"stamp_ns": 0, "estop_latched": False, "events": ["estop_release_refused:left_squeeze"]}
    assert gate.passes("state", state, 0, news=True)
    assert gate.passes("state", dict(state, stamp_ns=1), 1, news=True)  # the same event again is another event
    assert not gate.passes("state", dict(state, stamp_ns=2, events=("estop_release_refused:left_squeeze",)), 2)
    assert gate.passes("state", dict(state, stamp_ns=3, events=[]), 3)


def test_nan_is_never_a_repeat_and_zero_keepalive_passes_everything():
    gate = ChangeGate(0.1)
    assert gate.passes("lift_cmd", {"stamp_ns": 0, "velocity_m_s": math.nan}, 0)
    assert gate.passes("lift_cmd", {"stamp_ns": 1, "velocity_m_s": math.nan}, 1)
    every = ChangeGate(0.0)
    assert all(every.passes("base_cmd", cmd(t), t * MS) for t in range(10))


@pytest.mark.parametrize("bad", [-0.01, 0.51, math.nan])
def test_a_keepalive_outside_half_the_watchdog_is_refused(bad):
    with pytest.raises(ConfigError, match="keepalive_s"):
        ChangeGate(bad)


@given(st.lists(st.tuples(st.integers(1, 40), st.sampled_from([0.0, 0.1, -0.3])), min_size=1, max_size=200))
def test_a_receiver_holding_the_newest_sent_value_always_has_the_current_one(steps):
    """Against its definition: after every message, what was last sent equals the
    message (stamp aside), and no two sends of an unchanged value are closer than the keep-alive."""
    gate = ChangeGate(0.1)
    now, held, last_send = 0, None, None
    for gap_ms, forward in steps:
        now += gap_ms * MS
        msg = cmd(now // MS, forward)
        if gate.passes("base_cmd", msg, now):
            if held is not None and held["forward_m_s"] == forward:
                assert now - last_send >= 100 * MS
            held, last_send = msg, now
        assert held["forward_m_s"] == forward
