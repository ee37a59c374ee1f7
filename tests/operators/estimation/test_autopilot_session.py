"""Autopilot link session: handshake, origin, streams, loss, reconnect (pure, injected time)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from teledora.models.config_files import load_estimation_config
from teledora.operators.estimation.autopilot_session import Action, AutopilotSession, LinkState

S = 1_000_000_000
STREAMS = {32: 0.05, 30: 0.05, 193: 0.5}
SESSION = load_estimation_config().ardupilot.session  # the shipped timings


def _session(**kw) -> AutopilotSession:
    return AutopilotSession(replace(SESSION, streams=STREAMS, **kw))


def _actions(steps):
    return [s.action for s in steps]


def test_starts_lost_and_asks_to_connect():
    s = _session()
    assert s.state is LinkState.LOST
    assert _actions(s.poll(0)) == [Action.RECONNECT]


def test_handshake_without_gps_sets_origin_then_streams():
    s = _session(origin_wait_s=1.0, retry_period_s=0.5)
    s.connected(0)
    assert _actions(s.poll(0)) == [Action.SEND_HEARTBEAT]  # nothing else before the autopilot answers
    assert not s.on_heartbeat(255, 190, 8, 1)  # a ground station's heartbeat does not count
    assert s.on_heartbeat(1, 1, 3, S // 10)
    assert s.state is LinkState.CONFIGURING and s.target_system == 1
    steps = s.poll(S // 10)
    assert Action.REQUEST_ORIGIN in _actions(steps) and Action.SET_ORIGIN not in _actions(steps)
    intervals = {st.msg_id: st.interval_us for st in steps if st.action is Action.REQUEST_INTERVAL}
    assert intervals == {32: 50_000, 30: 50_000, 193: 500_000}
    s.on_heartbeat(1, 1, 3, S)
    steps = s.poll(int(1.2 * S))  # no origin answer after origin_wait_s: set one
    assert Action.SET_ORIGIN in _actions(steps) and s.origin_set_by_us
    s.on_origin()
    for m in STREAMS:
        s.on_stream_message(m, int(1.3 * S))
    s.poll(int(1.3 * S))
    assert s.state is LinkState.STREAMING


def test_with_gps_origin_never_sets_one():
    s = _session(origin_wait_s=1.0, retry_period_s=0.5)
    s.connected(0)
    s.on_heartbeat(1, 1, 3, 0)
    s.poll(0)
    s.on_origin()
    for t in range(1, 6):
        s.on_heartbeat(1, 1, 3, t * S // 2)
        assert Action.SET_ORIGIN not in _actions(s.poll(t * S // 2))


def test_heartbeat_timeout_then_reconnect_after_delay():
    s = _session(link_timeout_s=3.0, reconnect_delay_s=1.0)
    s.connected(0)
    s.on_heartbeat(1, 1, 3, 0)
    s.poll(2 * S)
    assert s.state is LinkState.CONFIGURING
    assert s.poll(int(3.1 * S)) == [] and s.state is LinkState.LOST and s.losses == 1
    assert "heartbeat" in s.last_loss_reason
    assert s.poll(int(3.5 * S)) == []
    assert _actions(s.poll(int(4.2 * S))) == [Action.RECONNECT]
    s.connected(int(4.2 * S))
    assert s.state is LinkState.WAITING_HEARTBEAT and s.connects == 2 and not s.origin_known


def test_no_first_heartbeat_is_a_loss():
    s = _session(heartbeat_timeout_s=2.0)
    s.connected(0)
    s.poll(int(2.5 * S))
    assert s.state is LinkState.LOST and "within" in s.last_loss_reason


def test_periodic_heartbeat_and_timesync():
    s = _session(heartbeat_period_s=1.0, timesync_period_s=0.5)
    s.connected(0)
    s.on_heartbeat(1, 1, 3, 0)
    counts = {Action.SEND_HEARTBEAT: 0, Action.SEND_TIMESYNC: 0}
    for k in range(0, 40):  # 4 s in 0.1 s steps
        now = k * S // 10
        s.on_heartbeat(1, 1, 3, now)
        for a in _actions(s.poll(now)):
            if a in counts:
                counts[a] += 1
    assert counts[Action.SEND_HEARTBEAT] == 4
    assert counts[Action.SEND_TIMESYNC] == 8


def test_stalled_stream_is_requested_again():
    s = _session(stream_timeout_s=1.0, retry_period_s=0.5)
    s.connected(0)
    s.on_heartbeat(1, 1, 3, 0)
    s.on_origin()
    for m in STREAMS:
        s.on_stream_message(m, 0)
    s.poll(0)
    assert s.state is LinkState.STREAMING
    s.on_heartbeat(1, 1, 3, int(1.5 * S))
    steps = s.poll(int(1.5 * S))
    assert s.state is LinkState.CONFIGURING and s.stream_stalls == 1
    assert {st.msg_id for st in steps if st.action is Action.REQUEST_INTERVAL} == set(STREAMS)
    assert Action.REQUEST_ORIGIN in _actions(steps)


def test_config_validation():
    with pytest.raises(ValueError, match="link_timeout_s"):
        replace(SESSION, link_timeout_s=0)
    with pytest.raises(ValueError, match="period"):
        replace(SESSION, streams={32: 0.0})
