"""Episode marks from the headset and from requests (pure; time is passed in).

The operator marks demonstrations while teleoperating:

* **left X+Y chord** (press X and Y together, release both): start an episode
  with the current task, or, when one is open, stop it and keep it;
* **right A+B chord** (press A and B together, release both): stop the open
  episode and discard it;
* **requests** (``teledora episode start --task ... / keep / discard``, or the
  page's buttons): the same three actions; ``start`` may set the task text.

How the chords sit beside the other controls (operators/teleop/teleop_scheme.py):
a chord fires on the *release*, and only if no button of the other hand's pair
went down while it was held, so the reset chord (X+Y+A+B, twice) never marks an
episode. X is "slow" and Y "clutch" on their own, so while the left chord is
held the left arm is clutched (it holds still) - marking never moves the arm.
The menu buttons and the squeeze (the e-stop and pause inputs) are not used.
Chords are blocked after a (re)connection until that hand's four buttons have
been seen up, like the reset chord, so a button already down at connect does not
count. Marks work while the e-stop is latched: stopping and keeping or
discarding an episode is exactly what an operator may want then.

Rules for the actions: ``start`` while an episode is open first keeps the open
one; ``keep``/``discard`` with none open do nothing (``refused``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.model.sides import SIDES

EVENTS = ("start", "keep", "discard")


@dataclass
class _Chord:
    """Both buttons of one hand's pair down, then both up, with the other pair untouched."""

    blocked: bool = True
    held: bool = False
    spoiled: bool = False

    def update(self, mine: tuple[bool, bool], other: tuple[bool, bool], connected: bool) -> bool:
        if not connected:
            self.blocked, self.held, self.spoiled = True, False, False
            return False
        if self.blocked:
            self.blocked = any(mine) or any(other)
            return False
        if any(other):
            self.spoiled = self.spoiled or self.held or any(mine)
        if not self.held:
            if all(mine):
                self.held = True
                self.spoiled = any(other)
            elif not any(mine) and not any(other):
                self.spoiled = False
            return False
        if any(mine):
            return False
        self.held = False
        fired = not self.spoiled
        self.spoiled = any(other)
        return fired


class EpisodeMarker:
    """Turns chords and requests into episode marks (``EpisodeMark`` messages).

    Args:
        task: The task text of episodes started by a chord until a request sets another.
    """

    def __init__(self, task: str) -> None:
        self.task = task
        self.open = False
        self._chords = {side: _Chord() for side in SIDES}
        self._marks: list[dict[str, Any]] = []
        self.refused: list[str] = []

    def on_controllers(self, msg: Mapping[str, Any], now_ns: int) -> None:
        """Feeds one decoded ``XrControllers`` report."""
        pairs = {}
        for side in SIDES:
            hand = msg[side]
            on = bool(hand["connected"])
            pairs[side] = (on and bool(hand["primary"]), on and bool(hand["secondary"])), on
        (left, left_on), (right, right_on) = pairs["left"], pairs["right"]
        if self._chords["left"].update(left, right, left_on):
            self.request("keep" if self.open else "start", now_ns)
        if self._chords["right"].update(right, left, right_on):
            self.request("discard", now_ns)

    def request(self, event: str, now_ns: int, task: str | None = None) -> bool:
        """Applies one action; False (and a ``refused`` note) when there was nothing to do."""
        if event not in EVENTS:
            raise ValueError(f"episode event must be one of {EVENTS}, got {event!r}")
        if task is not None and not task.strip():
            raise ValueError("an episode's task text must not be empty")
        if event == "start":
            if self.open:
                self._mark("keep", now_ns)
            if task is not None:
                self.task = task
            self._mark("start", now_ns)
            self.open = True
            return True
        if not self.open:
            self.refused.append(f"{event}: no episode open")
            return False
        self._mark(event, now_ns)
        self.open = False
        return True

    def _mark(self, event: str, now_ns: int) -> None:
        self._marks.append({"stamp_ns": int(now_ns), "event": event, "task": self.task})

    def take_marks(self) -> list[dict[str, Any]]:
        """The marks made since the last call, oldest first."""
        marks, self._marks = self._marks, []
        return marks
