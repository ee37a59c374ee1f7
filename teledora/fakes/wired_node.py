"""A live in-process stand-in for a dora node, wired to others like dataflow edges.

Inputs come from a queue (``push``); every output is recorded with its
metadata and routed to the inputs named in ``routes``
(``{output_id: [(target, input_id), ...]}``). Nodes run their real ``main()``
in threads, so a test or benchmark can run, say, the xr and teleop nodes
against a real browser without a dora daemon.
"""

from __future__ import annotations

import queue
from typing import Any


class WiredNode:
    def __init__(self, routes: dict[str, list[tuple["WiredNode", str]]] | None = None) -> None:
        self.inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.routes = routes or {}
        self.outputs: dict[str, list[Any]] = {}
        self.metadata: dict[str, list[dict]] = {}
        self.logs: list[tuple[str, str]] = []

    def push(self, input_id: str, value: Any, metadata: dict | None = None) -> None:
        self.inbox.put({"type": "INPUT", "id": input_id, "value": value, "metadata": dict(metadata or {})})

    def stop(self) -> None:
        """STOP, then the end of the stream."""
        self.inbox.put({"type": "STOP", "id": "test"})
        self.inbox.put(None)

    def next(self, timeout: float | None = None):
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return {"type": "ERROR", "error": "timeout"}

    def try_recv(self):
        try:
            ev = self.inbox.get_nowait()
        except queue.Empty:
            return None
        if ev is None:  # end of stream: leave the marker for next()
            self.inbox.put(None)
        return ev

    def drain(self):
        out = []
        while (ev := self.try_recv()) is not None:
            out.append(ev)
        return out

    def send_output(self, output_id: str, value: Any, metadata: dict | None = None) -> None:
        self.outputs.setdefault(output_id, []).append(value)
        self.metadata.setdefault(output_id, []).append(dict(metadata or {}))
        for target, input_id in self.routes.get(output_id, []):
            target.push(input_id, value, metadata)  # dora hands the sender's metadata to every receiver

    def log(self, level: str, message: str) -> None:
        self.logs.append((level, message))
