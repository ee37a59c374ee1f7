"""Health counters every node keeps and publishes about once a second."""

from __future__ import annotations

import json
from typing import Any


class Diagnostics:
    """Counts what a node received, sent, rejected and dropped.

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
        self.dropped = 0
        self.last_error = ""
        self.level = "ok"
        self.message = ""
        self.details: dict[str, Any] = {}
        self._last_publish_ns: int | None = None

    def reject(self, reason: str) -> None:
        """Counts one rejected message and remembers why."""
        self.rejected += 1
        self.last_error = reason

    def error(self, reason: str) -> None:
        """Records an error that is not tied to one message."""
        self.last_error = reason

    def set_status(self, level: str, message: str = "") -> None:
        self.level = level
        self.message = message

    def due(self, now_ns: int) -> bool:
        """True when a snapshot should be published now."""
        return self._last_publish_ns is None or now_ns - self._last_publish_ns >= self.period_ns

    def snapshot(self, now_ns: int) -> dict[str, Any]:
        """A Diagnostics message dict; marks the publication time."""
        self._last_publish_ns = now_ns
        return {
            "stamp_ns": int(now_ns),
            "node": self.node,
            "level": self.level,
            "message": self.message,
            "received": self.received,
            "sent": self.sent,
            "rejected": self.rejected,
            "dropped": self.dropped,
            "last_error": self.last_error,
            "details_json": json.dumps(self.details, sort_keys=True, default=float),
        }
