"""Who drives the robot: the operator, a learned policy, or nobody.

The selector sits where the operator's commands and the policy's commands
meet (the node that owns the IK's inputs calls it once per step) and decides
whose arm targets, base and lift commands go on:

* **E-stop wins.** While the e-stop is latched nobody drives (``stopped``), and
  authority falls back to the operator: after the release the policy needs the
  hand-back gesture again.
* **Takeover is immediate.** A step that carries a controller report with a
  clutch (Y or B) held or a grip squeezed (``squeeze`` at or over
  ``takeover_squeeze`` on either hand) gives the operator authority on that
  same step.
* **Hand-back only on the gesture:** both primary buttons (X on the left hand
  and A on the right) held together for ``handback_hold_s``, pressed after
  both were seen up (a chord held at start-up or through an e-stop, a takeover
  or a hand-back does nothing until released), with no clutch or grip
  meanwhile. The hold is timed over the reports that show it, so a feed that
  stops mid-gesture never completes it. X and A alone are the slow mode, so the
  gesture moves nothing on its way. A hand-back to a policy whose newest
  action is stale is refused (event ``handback_refused``).
* **A stale policy drives nothing.** With authority at the policy and its
  newest action older than ``policy_timeout_s`` (or stamped ahead of the
  clock), the arms, base and lift hold (``stopped``); authority stays with the
  policy and it drives again as soon as its actions are fresh.

Time is passed in (host ns); nothing here reads a clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from teledora.operators.errors import ConfigError

OPERATOR = "operator"
POLICY = "policy"
STOPPED = "stopped"
DRIVERS = (OPERATOR, POLICY, STOPPED)

# A policy action stamped this far ahead of the selector's clock is still taken
# as current (clocks of two processes on one host read a little apart).
FUTURE_TOLERANCE_NS = 50_000_000


@dataclass(frozen=True)
class AuthorityConfig:
    """The selector's thresholds.

    Args:
        policy_timeout_s: A policy action older than this no longer drives.
        handback_hold_s: How long both primaries must be held to hand back.
        takeover_squeeze: A squeeze at or over this on either hand takes over.
    """

    policy_timeout_s: float = 0.2
    handback_hold_s: float = 1.0
    takeover_squeeze: float = 0.5

    def __post_init__(self) -> None:
        for name in ("policy_timeout_s", "handback_hold_s"):
            v = getattr(self, name)
            if not (math.isfinite(v) and v > 0):
                raise ConfigError(f"authority {name} must be positive and finite, got {v!r}")
        if not (math.isfinite(self.takeover_squeeze) and 0 < self.takeover_squeeze <= 1):
            raise ConfigError(f"authority takeover_squeeze must be in (0, 1], got {self.takeover_squeeze!r}")


@dataclass(frozen=True)
class Decision:
    """One step's answer: who drives now, who holds authority, and why."""

    driver: str
    holder: str
    reason: str
    events: tuple[str, ...] = ()

    def hud(self) -> str:
        """A short line for the headset HUD and diagnostics."""
        if self.driver == STOPPED:
            return f"STOPPED ({self.reason})"
        return "POLICY DRIVING" if self.driver == POLICY else "OPERATOR DRIVING"


@dataclass
class AuthorityCounts:
    takeovers: int = 0
    handbacks: int = 0
    handbacks_refused: int = 0
    estop_revocations: int = 0
    stale_steps: int = 0
    events: dict[str, int] = field(default_factory=dict)


def _pressed(hand: Mapping[str, Any] | None) -> tuple[bool, bool]:
    """(takeover input held, primary held) of one hand's report; nothing for a
    hand that is absent or not connected."""
    if not hand or not hand.get("connected"):
        return False, False
    return bool(hand.get("secondary")), bool(hand.get("primary"))


class Authority:
    """The selector's state machine (see the module docstring for its rules).

    Starts with the operator holding authority: a policy only drives after the
    gesture.
    """

    def __init__(self, config: AuthorityConfig | None = None) -> None:
        self.config = config or AuthorityConfig()
        self.holder = OPERATOR
        self.counts = AuthorityCounts()
        self._policy_stamp_ns: int | None = None
        self._takeover_held = False
        self._gesture_held = False
        self._gesture_armed = False  # both primaries seen up since the last use of the gesture
        self._gesture_since_ns: int | None = None

    def _apply_report(self, report: Mapping[str, Any], now_ns: int) -> None:
        thr = self.config.takeover_squeeze
        left, right = report.get("left"), report.get("right")
        clutch_l, prim_l = _pressed(left)
        clutch_r, prim_r = _pressed(right)
        grip = any(h and h.get("connected") and float(h.get("squeeze", 0.0)) >= thr for h in (left, right))
        self._takeover_held = clutch_l or clutch_r or grip
        self._gesture_held = prim_l and prim_r
        if not self._gesture_held:
            self._gesture_armed = True
            self._gesture_since_ns = None
        elif self._gesture_armed and self._gesture_since_ns is None:
            self._gesture_since_ns = now_ns

    def _cancel_gesture(self) -> None:
        self._gesture_since_ns = None
        if self._gesture_held:
            self._gesture_armed = False  # to be pressed again from up

    def policy_fresh(self, now_ns: int) -> bool:
        s = self._policy_stamp_ns
        if s is None:
            return False
        age = now_ns - s
        return -FUTURE_TOLERANCE_NS <= age <= self.config.policy_timeout_s * 1e9

    def step(self, now_ns: int, *, estop_latched: bool, controllers: Mapping[str, Any] | None = None,
             policy_stamp_ns: int | None = None) -> Decision:
        """Decide for this step.

        Args:
            now_ns: The selector's clock.
            estop_latched: The operator's e-stop latch (the teleop scheme's).
            controllers: The newest controller report since the last step
                (``XrControllers``, decoded), if one arrived.
            policy_stamp_ns: ``stamp_ns`` of the newest policy action since the
                last step, if one arrived.
        """
        events: list[str] = []
        if policy_stamp_ns is not None:
            self._policy_stamp_ns = policy_stamp_ns if self._policy_stamp_ns is None else max(
                self._policy_stamp_ns, policy_stamp_ns)
        if controllers is not None:
            self._apply_report(controllers, now_ns)
        fresh = self.policy_fresh(now_ns)
        if estop_latched:
            if self.holder == POLICY:
                events.append("estop_revoked_policy")
                self.counts.estop_revocations += 1
            self.holder = OPERATOR
            self._cancel_gesture()
        elif self._takeover_held:
            if self.holder == POLICY:
                events.append("takeover")
                self.counts.takeovers += 1
            self.holder = OPERATOR
            self._cancel_gesture()
        elif (controllers is not None and self.holder == OPERATOR and self._gesture_since_ns is not None
              and now_ns - self._gesture_since_ns >= self.config.handback_hold_s * 1e9):
            self._gesture_armed = False
            self._gesture_since_ns = None
            if fresh:
                self.holder = POLICY
                events.append("handback")
                self.counts.handbacks += 1
            else:
                events.append("handback_refused")
                self.counts.handbacks_refused += 1
        if estop_latched:
            decision = Decision(STOPPED, self.holder, "e-stop latched", tuple(events))
        elif self.holder == OPERATOR:
            decision = Decision(OPERATOR, OPERATOR, "operator has authority", tuple(events))
        elif fresh:
            decision = Decision(POLICY, POLICY, "policy has authority", tuple(events))
        else:
            self.counts.stale_steps += 1
            decision = Decision(STOPPED, POLICY, "policy actions stale: holding", tuple(events))
        for e in events:
            self.counts.events[e] = self.counts.events.get(e, 0) + 1
        return decision

    def details(self) -> dict[str, Any]:
        """Counters for the diagnostics' details."""
        c = self.counts
        return {"holder": self.holder, "takeovers": c.takeovers, "handbacks": c.handbacks,
                "handbacks_refused": c.handbacks_refused, "estop_revocations": c.estop_revocations,
                "stale_steps": c.stale_steps}
