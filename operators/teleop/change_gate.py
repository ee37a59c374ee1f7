"""Which repeats of a message stream are worth sending.

Teleop steps at the XR report rate (up to 90 Hz), but its base and lift
commands and its state mostly say the same thing step after step (sticks at
rest, nothing latched or clutched), and every message costs each receiver
(the base, the lift, the ik, the recorder) a dora delivery. A message passes
the gate when any field but its stamp differs from the last one that passed,
or when ``keepalive_s`` has gone by since: a change goes out at once, an
unchanged value often enough to keep the receivers' watchdogs (1 s for the
base and lift, by arrival) fed. Every receiver holds the newest value, so a
value held is the same as a value repeated. Times are passed in.
"""

from __future__ import annotations

from typing import Any, Mapping

from teledora.operators.errors import ConfigError

MAX_KEEPALIVE_S = 0.5  # half the base's and lift's command watchdog


class ChangeGate:
    """Per stream: the last message passed and when.

    Args:
        keepalive_s: An unchanged message passes once this long after the
            last one that passed; 0 passes every message. At most
            ``MAX_KEEPALIVE_S``.
    """

    def __init__(self, keepalive_s: float) -> None:
        if not 0.0 <= keepalive_s <= MAX_KEEPALIVE_S:
            raise ConfigError(f"keepalive_s must be within 0..{MAX_KEEPALIVE_S} s, got {keepalive_s}")
        self.keepalive_ns = int(round(keepalive_s * 1e9))
        self._last: dict[str, tuple[dict[str, Any], int]] = {}
        self.held: dict[str, int] = {}  # messages not sent, per stream

    def passes(self, stream: str, msg: Mapping[str, Any], now_ns: int, news: bool = False) -> bool:
        """True when ``msg`` should be sent on ``stream`` at ``now_ns`` (and then
        remembered as the last one sent). ``news``: it reports something that
        happened (an event), which must go out even if it reads as the last did."""
        content = {k: v for k, v in msg.items() if k != "stamp_ns"}
        last = self._last.get(stream)
        if (not news and last is not None and self.keepalive_ns > 0 and now_ns - last[1] < self.keepalive_ns
                and _same(content, last[0])):
            self.held[stream] = self.held.get(stream, 0) + 1
            return False
        self._last[stream] = (content, now_ns)
        return True


def _same(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Field by field; a float NaN is never the same (it passes)."""
    if a.keys() != b.keys():
        return False
    for key, value in a.items():
        other = b[key]
        if isinstance(value, (list, tuple)) or isinstance(other, (list, tuple)):
            if list(value) != list(other):
                return False
        elif not (value == other):
            return False
    return True
