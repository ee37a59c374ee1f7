"""Health counters every node keeps and publishes about once a second."""

from __future__ import annotations

import json
from typing import Any

from teledora.operators.contract.messages import DIAGNOSTIC_LEVELS


class Diagnostics:
    """Counts what a node received, sent, rejected, clamped and dropped.

    The level a snapshot reports is the node's own (:meth:`set_status`),
    raised to ``warn`` when the node rejected or clamped an input since the
    previous snapshot: a node that is refusing or cutting down its inputs never
    reports ``ok``, whatever its own state.

    Args:
        node: The node id, copied into each snapshot.
        period_ns: Publishing period (default 1 s).
    """

    def __init__(self, node: str, period_ns: int = 1_000_000_000) -> None:
        self.node = node
        self.period_ns = period_ns
        self.received = 0
        self.sent = 0
        self.rejected = 0
        self.clamped = 0
        self.dropped = 0
        self.last_error = ""
        self.last_clamp = ""
        self._last_reject = ""
        self.level = "ok"
        self.message = ""
        self.details: dict[str, Any] = {}
        self.rejected_by_reason: dict[str, int] = {}
        # what the node runtime reports (scheduling), kept whatever the node does with ``details``
        self.runtime_details: dict[str, Any] = {}
        self._last_publish_ns: int | None = None
        self._rejected_at_publish = 0
        self._clamped_at_publish = 0

    def reject(self, reason: str, category: str = "contract") -> None:
        """Counts one rejected message (also per ``category``, the rule it
        broke, in the details' ``rejected_by_reason``) and remembers why."""
        self.rejected += 1
        self.last_error = reason
        self._last_reject = reason
        self.rejected_by_reason[category] = self.rejected_by_reason.get(category, 0) + 1

    def clamp(self, reason: str) -> None:
        """Counts one input that was cut down to a limit before use, and remembers which."""
        self.clamped += 1
        self.last_clamp = reason

    def error(self, reason: str) -> None:
        """Records an error that is not tied to one message."""
        self.last_error = reason

    def set_status(self, level: str, message: str = "") -> None:
        if level not in DIAGNOSTIC_LEVELS:
            raise ValueError(f"diagnostics level must be one of {DIAGNOSTIC_LEVELS}, got {level!r}")
        self.level = level
        self.message = message

    def clamped_since_snapshot(self) -> int:
        """Inputs clamped since the last snapshot."""
        return self.clamped - self._clamped_at_publish

    def rejected_since_snapshot(self) -> int:
        """Inputs rejected since the last snapshot."""
        return self.rejected - self._rejected_at_publish

    def due(self, now_ns: int) -> bool:
        """True when a snapshot should be published now."""
        return self._last_publish_ns is None or now_ns - self._last_publish_ns >= self.period_ns

    def _reported_status(self) -> tuple[str, str]:
        """The node's level and message, raised to ``warn`` by inputs refused or clamped this period."""
        rejected, clamped = self.rejected_since_snapshot(), self.clamped_since_snapshot()
        if self.level != "ok" or not (rejected or clamped):
            return self.level, self.message
        parts = []
        if rejected:
            parts.append(f"{rejected} input(s) rejected (last: {self._last_reject})")
        if clamped:
            parts.append(f"{clamped} input(s) clamped (last: {self.last_clamp})")
        return "warn", "since the last report: " + "; ".join(parts)

    def _details(self) -> dict[str, Any]:
        """The node's details, the runtime's, and the rejections per reason once there are any."""
        if not (self.rejected_by_reason or self.runtime_details):
            return self.details
        extra = {"rejected_by_reason": dict(self.rejected_by_reason)} if self.rejected_by_reason else {}
        return {**self.details, **self.runtime_details, **extra}

    def snapshot(self, now_ns: int) -> dict[str, Any]:
        """A Diagnostics message dict; marks the publication time and starts a new period."""
        level, message = self._reported_status()
        self._last_publish_ns = now_ns
        self._rejected_at_publish = self.rejected
        self._clamped_at_publish = self.clamped
        return {
            "stamp_ns": int(now_ns),
            "node": self.node,
            "level": level,
            "message": message,
            "received": self.received,
            "sent": self.sent,
            "rejected": self.rejected,
            "clamped": self.clamped,
            "dropped": self.dropped,
            "last_error": self.last_error,
            "details_json": json.dumps(self._details(), sort_keys=True, default=float),
        }
