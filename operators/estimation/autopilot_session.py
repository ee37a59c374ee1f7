"""Link session with a MAVLink autopilot: handshake, configuration and loss detection.

A pure state machine; the node feeds it what arrived and the time, and it says
what to send. No sockets, no clocks.

States:

* ``WAITING_HEARTBEAT`` — just (re)connected. Our own heartbeat goes out every
  ``heartbeat_period_s`` (a UDP autopilot learns our address from it); no
  autopilot heartbeat within ``heartbeat_timeout_s`` means the link is lost.
* ``CONFIGURING`` — the autopilot answered. Ask whether it has an EKF origin
  (REQUEST_MESSAGE GPS_GLOBAL_ORIGIN); without an answer after
  ``origin_wait_s`` (no GPS) set one with SET_GPS_GLOBAL_ORIGIN. Request each
  stream with SET_MESSAGE_INTERVAL until it is seen. Both are retried every
  ``retry_period_s``.
* ``STREAMING`` — origin known and every stream arriving. A stream silent for
  ``stream_timeout_s`` while heartbeats continue (the autopilot rebooted quickly,
  or another program changed the rates) sends the session back to
  ``CONFIGURING``, which checks the origin and requests the streams again.
* ``LOST`` — no heartbeat for ``link_timeout_s`` (or an I/O error): after
  ``reconnect_delay_s`` the node reopens the link and calls :meth:`connected`.

Heartbeat and TIMESYNC requests go out periodically in every connected state.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Mapping

MAV_AUTOPILOT_INVALID = 8
MSG_GPS_GLOBAL_ORIGIN = 49


class LinkState(enum.Enum):
    WAITING_HEARTBEAT = "waiting_heartbeat"
    CONFIGURING = "configuring"
    STREAMING = "streaming"
    LOST = "lost"


class Action(enum.Enum):
    """What the node must send or do."""

    SEND_HEARTBEAT = "send_heartbeat"
    SEND_TIMESYNC = "send_timesync"
    REQUEST_ORIGIN = "request_origin"
    SET_ORIGIN = "set_origin"
    REQUEST_INTERVAL = "request_interval"
    RECONNECT = "reconnect"


@dataclass(frozen=True)
class Step:
    """One action; ``msg_id``/``interval_us`` only for REQUEST_INTERVAL."""

    action: Action
    msg_id: int = 0
    interval_us: int = 0


@dataclass(frozen=True)
class SessionConfig:
    """Timing of the session (s) and the streams to request (message id → period s)."""

    heartbeat_timeout_s: float
    link_timeout_s: float
    reconnect_delay_s: float
    heartbeat_period_s: float
    timesync_period_s: float
    retry_period_s: float
    origin_wait_s: float
    set_origin: bool
    stream_timeout_s: float
    streams: Mapping[int, float]

    def __post_init__(self) -> None:
        for name in ("heartbeat_timeout_s", "link_timeout_s", "heartbeat_period_s", "timesync_period_s",
                     "retry_period_s", "stream_timeout_s"):
            if not getattr(self, name) > 0.0:
                raise ValueError(f"{name} must be > 0")
        if self.reconnect_delay_s < 0 or self.origin_wait_s < 0:
            raise ValueError("reconnect_delay_s and origin_wait_s must be >= 0")
        for msg_id, period in self.streams.items():
            if not period > 0.0:
                raise ValueError(f"stream {msg_id}: period must be > 0")


def _s(ns: int) -> float:
    return ns * 1e-9


class AutopilotSession:
    """Handshake/config/loss state machine for one autopilot link.

    Args:
        config: Timings and requested streams.
    """

    def __init__(self, config: SessionConfig) -> None:
        self.config = config
        self.state = LinkState.LOST
        self.target_system = 0
        self.target_component = 0
        self.origin_known = False
        self.origin_set_by_us = False
        self.streams_seen: set[int] = set()
        self.stream_stalls = 0
        self._stream_rx_ns: dict[int, int] = {}
        self.connects = 0
        self.losses = 0
        self.last_loss_reason = ""
        self._lost_ns: int | None = None
        self._connected_ns = 0
        self._configuring_ns = 0
        self._last_heartbeat_rx_ns = 0
        self._next_heartbeat_ns = 0
        self._next_timesync_ns = 0
        self._next_retry_ns = 0

    # -- events ----------------------------------------------------------------------------
    def connected(self, now_ns: int) -> None:
        """The link was (re)opened."""
        self.state = LinkState.WAITING_HEARTBEAT
        self.connects += 1
        self._connected_ns = now_ns
        self._next_heartbeat_ns = self._next_timesync_ns = now_ns
        self.origin_known = False
        self.streams_seen.clear()

    def lost(self, now_ns: int, reason: str) -> None:
        """The link failed (I/O error, timeout)."""
        if self.state is not LinkState.LOST:
            self.losses += 1
        self.state = LinkState.LOST
        self.last_loss_reason = reason
        self._lost_ns = now_ns

    def on_heartbeat(self, system: int, component: int, autopilot: int, now_ns: int) -> bool:
        """A HEARTBEAT arrived. Only an autopilot's counts (not a GCS's). Returns True if it counted."""
        if autopilot == MAV_AUTOPILOT_INVALID or self.state is LinkState.LOST:
            return False
        if self.target_system and system != self.target_system and self.state is not LinkState.WAITING_HEARTBEAT:
            return False
        self._last_heartbeat_rx_ns = now_ns
        if self.state is LinkState.WAITING_HEARTBEAT:
            self.target_system, self.target_component = system, component
            self.state = LinkState.CONFIGURING
            self._configuring_ns = now_ns
            self._next_retry_ns = now_ns
        return True

    def on_origin(self) -> None:
        """GPS_GLOBAL_ORIGIN arrived: the EKF has an origin."""
        self.origin_known = True

    def on_stream_message(self, msg_id: int, now_ns: int) -> None:
        """A message of a requested stream arrived."""
        self.streams_seen.add(msg_id)
        self._stream_rx_ns[msg_id] = now_ns

    # -- decisions -------------------------------------------------------------------------
    def poll(self, now_ns: int) -> list[Step]:
        """What to do now."""
        c = self.config
        if self.state is LinkState.LOST:
            if self._lost_ns is None or _s(now_ns - self._lost_ns) >= c.reconnect_delay_s:
                return [Step(Action.RECONNECT)]
            return []
        if self.state is LinkState.WAITING_HEARTBEAT and _s(now_ns - self._connected_ns) > c.heartbeat_timeout_s:
            self.lost(now_ns, f"no autopilot heartbeat within {c.heartbeat_timeout_s:.1f} s")
            return []
        if self.state in (LinkState.CONFIGURING, LinkState.STREAMING) and \
                _s(now_ns - self._last_heartbeat_rx_ns) > c.link_timeout_s:
            self.lost(now_ns, f"no heartbeat for {c.link_timeout_s:.1f} s")
            return []
        if self.state is LinkState.STREAMING:
            stalled = [m for m in c.streams if _s(now_ns - self._stream_rx_ns.get(m, 0)) > c.stream_timeout_s]
            if stalled:
                self.stream_stalls += 1
                self.streams_seen.clear()
                self.origin_known = False
                self.state = LinkState.CONFIGURING
                self._configuring_ns = now_ns
                self._next_retry_ns = now_ns
        steps: list[Step] = []
        if now_ns >= self._next_heartbeat_ns:
            steps.append(Step(Action.SEND_HEARTBEAT))
            self._next_heartbeat_ns = now_ns + int(c.heartbeat_period_s * 1e9)
        if self.state is LinkState.WAITING_HEARTBEAT:
            return steps
        if now_ns >= self._next_timesync_ns:
            steps.append(Step(Action.SEND_TIMESYNC))
            self._next_timesync_ns = now_ns + int(c.timesync_period_s * 1e9)
        missing = [m for m in c.streams if m not in self.streams_seen]
        if now_ns >= self._next_retry_ns:
            self._next_retry_ns = now_ns + int(c.retry_period_s * 1e9)
            if not self.origin_known:
                if c.set_origin and _s(now_ns - self._configuring_ns) >= c.origin_wait_s:
                    steps.append(Step(Action.SET_ORIGIN))
                    self.origin_set_by_us = True
                else:
                    steps.append(Step(Action.REQUEST_ORIGIN))
            for m in missing:
                steps.append(Step(Action.REQUEST_INTERVAL, m, int(c.streams[m] * 1e6)))
        if self.origin_known and not missing:
            self.state = LinkState.STREAMING
        elif self.state is LinkState.STREAMING and missing:
            self.state = LinkState.CONFIGURING
        return steps
