"""Gap detection for recorded topics: stalls, lost counters, clocks going back.

A recorder on ``queue_policy: backpressure`` should never lose a message, but
it can still see evidence that something upstream did: a topic that normally
ticks every 33 ms and then says nothing for a second, a producer counter that
jumps, or a ``stamp_ns`` that goes backwards. :class:`GapDetector` watches
each topic online (time is passed in, nothing is read from a clock) and
reports such gaps; :func:`find_gaps` runs it over a whole recorded topic.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np

from teledora.operators.errors import ConfigError

GAP_KINDS = ("stall", "counter", "backwards")
MEDIAN_REFRESH = 16


class GapConfigError(ConfigError):
    """Detector settings that cannot work."""


@dataclass(frozen=True)
class Gap:
    """One detected gap in a topic.

    Attributes:
        topic: Topic name.
        kind: ``stall`` (silence much longer than the usual period),
            ``counter`` (a producer counter skipped values) or ``backwards``
            (time or counter went back).
        start_ns: Time of the message before the gap.
        end_ns: Time of the message after the gap.
        missing: Messages known to be absent (from the producer's counter,
            when it has one), else estimated (a stall: its length over the
            topic's median period).
        exact: ``missing`` comes from the counter, not from an estimate.
    """

    topic: str
    kind: str
    start_ns: int
    end_ns: int
    missing: int
    exact: bool = True

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9


@dataclass
class _TopicState:
    last_ns: int | None = None
    last_counter: int | None = None
    intervals: deque = field(default_factory=lambda: deque(maxlen=64))
    added_since_median: int = 0
    median_ns: float | None = None


class GapDetector:
    """Online per-topic gap detection.

    Args:
        stall_factor: An interval longer than this many typical periods is a stall.
        min_stall_s: ...and it must also be at least this long (ignores jitter of
            fast topics).
        warmup: Intervals needed before the typical period is trusted.
    """

    def __init__(self, stall_factor: float = 4.0, min_stall_s: float = 0.25, warmup: int = 8) -> None:
        if stall_factor <= 1.0:
            raise GapConfigError(f"stall_factor must be > 1, got {stall_factor}")
        if min_stall_s < 0:
            raise GapConfigError(f"min_stall_s must be >= 0, got {min_stall_s}")
        if warmup < 1:
            raise GapConfigError(f"warmup must be >= 1, got {warmup}")
        self.stall_factor = float(stall_factor)
        self.min_stall_ns = int(min_stall_s * 1e9)
        self.warmup = int(warmup)
        self._topics: dict[str, _TopicState] = {}
        self.gaps: list[Gap] = []

    def typical_period_ns(self, topic: str) -> float | None:
        """Median of the topic's recent intervals, once warmed up."""
        state = self._topics.get(topic)
        if state is None or len(state.intervals) < self.warmup:
            return None
        # the median moves slowly: refresh it every few intervals, not per message
        if state.median_ns is None or state.added_since_median >= MEDIAN_REFRESH:
            state.median_ns = float(np.median(np.fromiter(state.intervals, dtype=np.int64)))
            state.added_since_median = 0
        return state.median_ns

    def observe(self, topic: str, t_ns: int, counter: int | None = None) -> list[Gap]:
        """Feeds one message; returns the gaps it reveals (also kept in ``gaps``)."""
        state = self._topics.setdefault(topic, _TopicState())
        found: list[Gap] = []
        # the producer's counter says exactly how many messages a silence lost;
        # the estimate from the median period does not hold for a producer that
        # sends in bursts (its median interval is the burst's spacing)
        counted = None if counter is None or state.last_counter is None else max(int(counter) - state.last_counter - 1, 0)
        if state.last_ns is not None:
            dt = int(t_ns) - state.last_ns
            if dt < 0:
                found.append(Gap(topic, "backwards", state.last_ns, int(t_ns), 0))
            else:
                period = self.typical_period_ns(topic)
                if period is not None and period > 0 and dt > max(self.stall_factor * period, self.min_stall_ns):
                    if counted is not None:
                        found.append(Gap(topic, "stall", state.last_ns, int(t_ns), counted))
                    else:
                        found.append(Gap(topic, "stall", state.last_ns, int(t_ns), max(int(round(dt / period)) - 1, 1),
                                         exact=False))
                else:
                    state.intervals.append(dt)
                    state.added_since_median += 1
        if counter is not None:
            if state.last_counter is not None:
                step = int(counter) - state.last_counter
                if step > 1:
                    found.append(Gap(topic, "counter", state.last_ns or int(t_ns), int(t_ns), step - 1))
                elif step <= 0:
                    found.append(Gap(topic, "backwards", state.last_ns or int(t_ns), int(t_ns), 0))
            state.last_counter = int(counter)
        state.last_ns = int(t_ns)
        self.gaps.extend(found)
        return found

    def counts(self) -> dict[str, int]:
        """Number of gaps of each kind seen so far."""
        return {kind: sum(1 for g in self.gaps if g.kind == kind) for kind in GAP_KINDS}


def find_gaps(
    topic: str,
    times_ns: Sequence[int],
    counters: Iterable[int | None] | None = None,
    detector: GapDetector | None = None,
) -> list[Gap]:
    """All gaps of one topic, given its message times (and optional counters)."""
    det = detector or GapDetector()
    counter_list = list(counters) if counters is not None else [None] * len(times_ns)
    if len(counter_list) != len(times_ns):
        raise GapConfigError(f"{len(times_ns)} times but {len(counter_list)} counters")
    out: list[Gap] = []
    for t, c in zip(times_ns, counter_list):
        out.extend(det.observe(topic, int(t), c))
    return out
