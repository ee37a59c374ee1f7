"""Which XR reports also go out on ``xr/buttons``: those at which a level changes.

A consumer that acts only on button presses, connections and the headset
page's buttons (the episodes node) does not need the 90 Hz report stream: the
reports at which one of those levels changes carry every edge it can see.
:class:`LevelChanges` picks them, plus one report per heartbeat period while
nothing changes, so a consumer that starts late (or a replay) learns the
current levels within that period.

The levels are every boolean field of ``XrControllers``: ``focused``, the
page's ``ui_*`` buttons and, per hand, ``connected``, ``pose_valid``,
``primary``, ``secondary``, ``stick_click`` and ``menu``. Analog values
(trigger, squeeze, stick, poses) never make a report due.
"""

from __future__ import annotations

from typing import Any, Mapping

from teledora.operators.contract.messages import BOOL, HAND_FIELDS, KINDS

#: Without a change, one report goes out at least this often.
HEARTBEAT_NS = 1_000_000_000

TOP_LEVELS: tuple[str, ...] = tuple(f.name for f in KINDS["XrControllers"] if f.type == BOOL)
HAND_LEVELS: tuple[str, ...] = tuple(f.name for f in HAND_FIELDS if f.type == BOOL)
SIDES = ("left", "right")


def levels(report: Mapping[str, Any]) -> tuple[bool, ...]:
    """Every boolean level of an ``XrControllers`` report, in a fixed order."""
    out = [bool(report[name]) for name in TOP_LEVELS]
    for side in SIDES:
        hand = report[side]
        out.extend(bool(hand[name]) for name in HAND_LEVELS)
    return tuple(out)


class LevelChanges:
    """Decides, report by report, which ones go out on the level-change topic.

    Args:
        heartbeat_ns: With no change, a report is due once this long has passed
            since the last one that went out.
    """

    def __init__(self, heartbeat_ns: int = HEARTBEAT_NS) -> None:
        if heartbeat_ns <= 0:
            raise ValueError(f"heartbeat_ns must be > 0, got {heartbeat_ns}")
        self.heartbeat_ns = int(heartbeat_ns)
        self._last: tuple[bool, ...] | None = None
        self._last_ns: int | None = None

    def due(self, report: Mapping[str, Any], now_ns: int) -> bool:
        """True when ``report`` goes out: the first one, one whose levels differ
        from those last sent, or any once the heartbeat period has passed. A
        True answer counts the report as sent."""
        now = levels(report)
        if now != self._last or self._last_ns is None or now_ns - self._last_ns >= self.heartbeat_ns:
            self._last, self._last_ns = now, int(now_ns)
            return True
        return False
