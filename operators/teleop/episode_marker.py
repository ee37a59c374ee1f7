"""Episode marks from the headset and from requests (pure; time is passed in).

The operator marks demonstrations while teleoperating:

* **left X+Y chord** (press X and Y together, release both): start an episode
  with the current task, or, when one is open, stop it and keep it;
* **right A+B chord** (press A and B together, release both): stop the open
  episode and discard it;
* **the headset page's episode buttons** (the in-VR panel; ``ui_episode_start``,
  ``ui_episode_keep``, ``ui_episode_discard`` in ``XrControllers``, each a level
  the page holds up for a moment per press): start and keep act on the level's
  rising edge; discard takes two rising edges, the first *arms* it and a second
  within ``discard_confirm_s`` discards (the page shows a separate CONFIRM button
  for that second step, so a stray or repeated press cannot discard). An armed
  discard is voided by any other mark, by the episode closing, by both
  controllers disconnecting, and by its window running out. The levels of the first report seen are a
  baseline, not presses;
* **requests** (``teledora episode start --task ... / keep / discard``): the
  same three actions, in one step; ``start`` may set the task text.

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
#: The page's episode buttons, as ``XrControllers`` fields, and the action of each.
UI_FIELDS = {"ui_episode_start": "start", "ui_episode_keep": "keep", "ui_episode_discard": "discard"}


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
        discard_confirm_s: How long an armed page discard waits for its confirmation (> 0).
    """

    def __init__(self, task: str, discard_confirm_s: float) -> None:
        if not discard_confirm_s > 0.0:
            raise ValueError(f"discard_confirm_s must be > 0, got {discard_confirm_s}")
        self.task = task
        self.open = False
        self.number = 0  # episodes started so far; the open one's number while one is open
        self.opened_ns = 0
        self.kept = 0
        self.discarded = 0
        self._confirm_ns = int(round(discard_confirm_s * 1e9))
        self._armed_ns: int | None = None
        self._ui: dict[str, bool] | None = None  # None: the next report is the baseline
        self._hands_on: bool | None = None  # a controller was connected in the last report
        self._chords = {side: _Chord() for side in SIDES}
        self._marks: list[dict[str, Any]] = []
        self.refused: list[str] = []

    @property
    def discard_armed(self) -> bool:
        """A page discard took its first step and awaits its confirmation."""
        return self._armed_ns is not None

    def expire(self, now_ns: int) -> None:
        """Voids an armed discard whose confirmation window ended before ``now_ns``."""
        if self._armed_ns is not None and now_ns - self._armed_ns > self._confirm_ns:
            self._armed_ns = None

    def state(self, now_ns: int) -> dict[str, Any]:
        """An ``EpisodeState`` message of what is held now."""
        self.expire(now_ns)
        return {"stamp_ns": int(now_ns), "open": self.open, "task": self.task, "number": self.number,
                "opened_ns": self.opened_ns if self.open else 0, "discard_armed": self.discard_armed,
                "kept": self.kept, "discarded": self.discarded}

    def on_controllers(self, msg: Mapping[str, Any], now_ns: int) -> None:
        """Feeds one decoded ``XrControllers`` report."""
        self.expire(now_ns)
        self._on_ui(msg, now_ns)
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

    def _on_ui(self, msg: Mapping[str, Any], now_ns: int) -> None:
        new = {k: bool(msg[k]) for k in UI_FIELDS}
        old, self._ui = self._ui, new
        hands_on = bool(msg["left"]["connected"] or msg["right"]["connected"])
        if self._hands_on and not hands_on:
            # both controllers went away: start over. On the change, not on every report
            # without them: a page used without controllers can still arm and confirm,
            # and a feed of level changes only (xr/buttons) voids exactly as the full one.
            self._armed_ns = None
        self._hands_on = hands_on
        if old is None:
            return
        for key, event in UI_FIELDS.items():
            if not new[key] or old[key]:
                continue
            if event != "discard":
                self.request(event, now_ns)
            elif not self.open:
                self.refused.append("discard: no episode open")
            elif self._armed_ns is None:
                self._armed_ns = now_ns
            else:
                self.request("discard", now_ns)

    def request(self, event: str, now_ns: int, task: str | None = None) -> bool:
        """Applies one action; False (and a ``refused`` note) when there was nothing to do."""
        if event not in EVENTS:
            raise ValueError(f"episode event must be one of {EVENTS}, got {event!r}")
        if task is not None and not task.strip():
            raise ValueError("an episode's task text must not be empty")
        self._armed_ns = None  # any action voids an armed page discard
        if event == "start":
            if self.open:
                self._close("keep", now_ns)
            if task is not None:
                self.task = task
            self._mark("start", now_ns)
            self.open = True
            self.number += 1
            self.opened_ns = int(now_ns)
            return True
        if not self.open:
            self.refused.append(f"{event}: no episode open")
            return False
        self._close(event, now_ns)
        return True

    def _close(self, event: str, now_ns: int) -> None:
        self._mark(event, now_ns)
        self.open = False
        if event == "keep":
            self.kept += 1
        else:
            self.discarded += 1

    def _mark(self, event: str, now_ns: int) -> None:
        self._marks.append({"stamp_ns": int(now_ns), "event": event, "task": self.task})

    def take_marks(self) -> list[dict[str, Any]]:
        """The marks made since the last call, oldest first."""
        marks, self._marks = self._marks, []
        return marks
