"""Parsed feed frames to ``XrControllers`` messages on the host clock.

The assembler keeps what a feed has to remember between frames: the sender
session and its last sequence number (duplicates and reordered frames are
dropped), and per-hand connection epochs (an epoch increments whenever a hand
connects again, and for both hands when the session or the controlling
client changes), so the teleop scheme can discard old references.

Stamps: each sample stamp is mapped to the host clock with the sender's
:class:`~teledora.operators.xr.headset_clock.ClockEstimate`, to the earliest
host time it can stand for, so the teleop rules judge the sample's true age
(link delay included) and never less. A frame with a mapped stamp later than
the host's receive time plus :data:`FUTURE_TOLERANCE_NS` is refused.

A frame is applied whole or not at all: :meth:`FeedAssembler.prepare`
validates everything and builds the message without touching the state;
:meth:`Assembled.commit` then applies it in one step. The disconnect message
(:meth:`FeedAssembler.disconnect`) is built from the state alone and cannot
be refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from teledora.operators.errors import TeledoraError
from teledora.operators.geometry import Pose
from teledora.operators.model.sides import SIDES
from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.headset_clock import ClockEstimate
from teledora.operators.xr.xr_feed_format import MAX_STAMP_NS, FeedFrame

#: A mapped stamp may lie this far after the host's receive time (residual
#: clock error not covered by the estimate's uncertainty, NTP corrections).
FUTURE_TOLERANCE_NS = 50_000_000
_SEQ_RESTART_GAP = 1000  # a sequence number this far backwards means the sender restarted


class StaleFrameError(TeledoraError, ValueError):
    """A frame older than (or equal to) the newest already accepted from this session: dropped."""


@dataclass(frozen=True)
class _State:
    session: str | None
    last_seq: int | None
    epoch: tuple[int, int]
    connected: tuple[bool, bool]
    out_seq: int


@dataclass(frozen=True)
class Assembled:
    """A validated frame's message and the state it leaves; nothing applied yet."""

    message: dict[str, Any]
    _owner: "FeedAssembler" = field(repr=False)
    _state: _State = field(repr=False)
    _link_delay_ns: int | None = field(repr=False, default=None)

    def commit(self) -> None:
        """Applies the frame to the assembler (call once the message is sent)."""
        self._owner._apply(self._state, self._link_delay_ns)


class FeedAssembler:
    """Turns accepted frames into ``XrControllers`` dicts on the host clock.

    Args:
        source: Written into each message's ``source`` field (e.g. ``"udp"``).
    """

    def __init__(self, source: str) -> None:
        self.source = source
        self._state = _State(None, None, (0, 0), (False, False), 0)
        self.link_delay_ns: int | None = None  # the last frame's receive time minus its earliest mapped send time
        self.max_link_delay_ns = 0

    @property
    def live(self) -> bool:
        """True while a hand is reported connected (a disconnect is due when the client goes)."""
        return any(self._state.connected)

    @property
    def out_seq(self) -> int:
        return self._state.out_seq

    def new_client(self) -> None:
        """The controlling client changed: its frames start a new sequence, and
        every hand that connects gets a new epoch."""
        s = self._state
        self._state = _State(None, None, s.epoch, (False, False), s.out_seq)

    def prepare(self, frame: FeedFrame, recv_ns: int, clock: ClockEstimate | None) -> Assembled:
        """Validates ``frame`` received at host time ``recv_ns`` and builds its message.

        Raises:
            FeedRejected: ``no_clock`` (no estimate for the sender's clock),
                ``future_stamp``, or ``number_range`` (a mapped stamp below 0
                or beyond int64).
            StaleFrameError: a duplicate or reordered frame (drop it).
        """
        if clock is None:
            raise FeedRejected("no_clock", "the sender's clock is not mapped to the host's yet (no ping answered)")
        s = self._state
        session, last_seq, connected = s.session, s.last_seq, s.connected
        if frame.session != session or (last_seq is not None and frame.seq < last_seq - _SEQ_RESTART_GAP):
            if session is not None or last_seq is not None:
                connected = (False, False)  # a restarted sender: new epochs below
            session, last_seq = frame.session, None
        if last_seq is not None and frame.seq <= last_seq:
            raise StaleFrameError(f"seq {frame.seq} is not newer than {last_seq}")
        latest = recv_ns + FUTURE_TOLERANCE_NS
        sent_host = clock.earliest_host_ns(frame.sent_ns)
        stamps: dict[str, tuple[int, int]] = {}
        for h in SIDES:
            hs = frame.hands[h]
            stamps[h] = (clock.earliest_host_ns(hs.pose_ns), clock.earliest_host_ns(hs.input_ns))
        for name, t in [("sent_ns", sent_host)] + [(f"{h}.{k}", v) for h in SIDES for k, v in zip(("pose_ns", "input_ns"), stamps[h])]:
            if t > latest:
                raise FeedRejected("future_stamp", f"{name} maps to {(t - recv_ns) / 1e6:.1f} ms after its arrival "
                                                   f"(tolerance {FUTURE_TOLERANCE_NS / 1e6:g} ms)")
            if not 0 <= t <= MAX_STAMP_NS:
                raise FeedRejected("number_range", f"{name} maps to {t}, outside [0, 2^63)")
        epoch = list(s.epoch)
        hands = {}
        for i, h in enumerate(SIDES):
            hs = frame.hands[h]
            if hs.connected and not connected[i]:
                epoch[i] += 1
            pose = hs.pose or Pose.identity()
            hands[h] = {
                "connected": hs.connected,
                "epoch": epoch[i],
                "pose_valid": hs.pose is not None,
                "position": pose.position,
                "orientation": pose.orientation,
                "trigger": hs.trigger,
                "squeeze": hs.squeeze,
                "stick": list(hs.stick),
                **hs.buttons,
                "pose_stamp_ns": stamps[h][0],
                "input_stamp_ns": stamps[h][1],
            }
        out_seq = s.out_seq + 1
        message = {
            "stamp_ns": recv_ns,
            "frame_id": "operator",
            "seq": out_seq,
            "source": self.source,
            "focused": frame.focused,
            "ui_estop": frame.ui["estop"],
            "ui_release_stop": frame.ui["release_stop"],
            "ui_pause": frame.ui["pause"],
            "ui_episode_start": frame.ui["episode_start"],
            "ui_episode_keep": frame.ui["episode_keep"],
            "ui_episode_discard": frame.ui["episode_discard"],
            "left": hands["left"],
            "right": hands["right"],
        }
        new = _State(session, frame.seq, (epoch[0], epoch[1]),
                     (frame.hands["left"].connected, frame.hands["right"].connected), out_seq)
        return Assembled(message, self, new, recv_ns - sent_host)

    def assemble(self, frame: FeedFrame, recv_ns: int, clock: ClockEstimate | None) -> dict[str, Any]:
        """:meth:`prepare` and commit at once; the message dict."""
        done = self.prepare(frame, recv_ns, clock)
        done.commit()
        return done.message

    def disconnect(self, now_ns: int) -> dict[str, Any]:
        """The message saying the client is gone: both hands disconnected, the
        page unfocused, no page button held (teleop pauses the arms and releases
        the buttons). Applied at once; the next frame starts a new sequence and
        new epochs. Built from the state alone: it cannot be refused."""
        s = self._state
        out_seq = s.out_seq + 1
        self._state = _State(None, None, s.epoch, (False, False), out_seq)
        ident = Pose.identity()
        gone = {h: {"connected": False, "epoch": s.epoch[i], "pose_valid": False, "position": ident.position,
                    "orientation": ident.orientation, "trigger": 0.0, "squeeze": 0.0, "stick": [0.0, 0.0],
                    "primary": False, "secondary": False, "stick_click": False, "menu": False,
                    "pose_stamp_ns": now_ns, "input_stamp_ns": now_ns} for i, h in enumerate(SIDES)}
        return {"stamp_ns": now_ns, "frame_id": "operator", "seq": out_seq, "source": self.source, "focused": False,
                "ui_estop": False, "ui_release_stop": False, "ui_pause": False, "ui_episode_start": False,
                "ui_episode_keep": False, "ui_episode_discard": False, "left": gone["left"], "right": gone["right"]}

    def _apply(self, state: _State, link_delay_ns: int | None) -> None:
        if state.out_seq != self._state.out_seq + 1:
            raise RuntimeError("a prepared frame was committed after another one: prepare it again")
        self._state = state
        if link_delay_ns is not None:
            self.link_delay_ns = link_delay_ns
            self.max_link_delay_ns = max(self.max_link_delay_ns, link_delay_ns)

    def snapshot(self) -> tuple:
        """Everything a frame can change, for tests that check whole-or-nothing."""
        return (self._state, self.link_delay_ns, self.max_link_delay_ns)
