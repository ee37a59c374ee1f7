"""A dora MockNode that hands out one event at a time and moves a fake clock.

``SteppedNode([(input_id, value, dt_s[, action]), ...])``: before each event is
delivered the shared :class:`FakeClock` advances by its ``dt_s`` (and the
optional ``action()`` runs, e.g. to inject a device fault), so node logic that reads
``clock()`` sees time pass exactly as scripted, without sleeping. ``drain()``
returns nothing (the queue never holds a burst unless a test asks for one).
"""

from __future__ import annotations

from typing import Any

from dora.testing import MockNode


class FakeClock:
    """Host clock in ns, moved only by the test."""

    def __init__(self, start_ns: int = 1_700_000_000_000_000_000) -> None:
        self.now_ns = start_ns

    def advance(self, dt_s: float) -> None:
        self.now_ns += int(round(dt_s * 1e9))

    def __call__(self) -> int:
        return self.now_ns


class SteppedNode(MockNode):
    def __init__(self, script: list[tuple], clock: FakeClock, metadata: dict | None = None) -> None:
        super().__init__([(s[0], s[1]) for s in script], metadata)
        self._steps = [(s[2], s[3] if len(s) > 3 else None) for s in script]
        self._clock = clock

    def next(self, timeout: float | None = None) -> dict[str, Any] | None:
        if self._steps:
            dt, action = self._steps.pop(0)
            self._clock.advance(dt)
            if action is not None:
                action()
        return super().next(timeout)

    def __next__(self) -> dict[str, Any]:
        ev = self.next()
        if ev is None:
            raise StopIteration
        return ev

    def drain(self) -> list[dict[str, Any]]:
        return []

    def outputs_decoded(self, output: str, kind: str) -> list[dict[str, Any]]:
        from teledora.operators.contract.messages import decode

        return [decode(kind, v) for v in self.outputs.get(output, [])]
