"""Recorder watch: an actuator holds the robot while its run is not being recorded.

The recorder publishes a ``status`` heartbeat (``RecorderStatus``, about
five a second) that carries how far it runs behind the senders. A node that
drives actuators and takes that heartbeat as its ``recorder_status`` input
asks :meth:`RecorderWatch.hold_reason` before each command it applies; a
non-empty reason means: apply the safe stop (arms hold their position, base
and lift velocities zero).

Policy:

- before the first heartbeat: hold (the robot moves only once recording works);
- the heartbeat input closed (the recorder ended or died) or the recorder
  reported that it stopped: hold, *latched* for the rest of the run, because
  the recording now has a hole that no later heartbeat can fill;
- no heartbeat for ``timeout_s``, or a reported lag behind the senders above
  ``max_lag_s``: hold while it lasts, release once heartbeats are back and
  the lag is under the bound (a silent or slow recorder that is still alive
  loses nothing: its input queues hold the messages; a dead one is caught by
  the closed input).

Pure logic: time is passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.errors import ConfigError

DEFAULT_TIMEOUT_S = 1.0
DEFAULT_MAX_LAG_S = 2.0


@dataclass
class RecorderWatch:
    """Decides, from the recorder's heartbeats, whether the robot must hold.

    Args:
        timeout_s: Longest silence of the heartbeat before the hold latches.
        max_lag_s: Largest lag behind the senders the recorder may report.
    """

    timeout_s: float = DEFAULT_TIMEOUT_S
    max_lag_s: float = DEFAULT_MAX_LAG_S

    def __post_init__(self) -> None:
        if not (self.timeout_s > 0 and self.max_lag_s > 0):
            raise ConfigError(f"timeout_s and max_lag_s must be positive, got {self.timeout_s}, {self.max_lag_s}")
        self._last_ns: int | None = None
        self._lag_ns = 0
        self._recording = True
        self.latched = ""
        self.holds = 0  # transitions from moving to holding
        self._holding = False
        self.kind = ""  # "", "starting", "silent", "behind" or "gone": the kind of the last reason

    def feed(self, status: Mapping[str, Any], now_ns: int) -> None:
        """A heartbeat (a decoded ``RecorderStatus``) arrived at ``now_ns``."""
        self._last_ns = now_ns
        self._lag_ns = int(status.get("lag_ns", 0))
        self._recording = bool(status.get("recording", True))
        if not self._recording and not self.latched:
            self.latched = "the recorder reported that it stopped recording"

    @property
    def waiting_for_first(self) -> bool:
        """True until the first heartbeat (and while nothing latched)."""
        return self._last_ns is None and not self.latched

    def closed(self) -> None:
        """The heartbeat input closed: the recorder has ended or died."""
        if not self.latched:
            self.latched = "the recorder's status stream ended (recorder stopped or died)"

    def hold_reason(self, now_ns: int) -> str:
        """Why the robot must hold now, or ``""`` when it may move."""
        reason = self._reason(now_ns)
        if reason and not self._holding:
            self.holds += 1
        self._holding = bool(reason)
        return reason

    def _reason(self, now_ns: int) -> str:
        self.kind, reason = self._classify(now_ns)
        return reason

    def _classify(self, now_ns: int) -> tuple[str, str]:
        if self.latched:
            return "gone", self.latched
        if self._last_ns is None:
            return "starting", "waiting for the recorder's first heartbeat"
        silent_s = (now_ns - self._last_ns) / 1e9
        if silent_s > self.timeout_s:
            return "silent", f"no recorder heartbeat for {silent_s:.2f} s (limit {self.timeout_s:g} s)"
        if self._lag_ns > self.max_lag_s * 1e9:
            return "behind", f"the recorder is {self._lag_ns / 1e9:.2f} s behind the senders (limit {self.max_lag_s:g} s)"
        return "", ""
