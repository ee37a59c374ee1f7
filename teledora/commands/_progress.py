"""Progress of the CLI's long work (exports, conversions, videos), drawn with rich.

A bar on stderr, so that what a command prints on stdout stays as it was.
On a terminal it redraws in place; elsewhere (a pipe, a log file) rich draws
nothing while it runs and the finished bar once at the end, so logs get one
line, not thousands.
"""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

T = TypeVar("T")
UPDATE_PERIOD_S = 0.1  # the bar redraws about ten times a second anyway


def _console() -> Console:
    return Console(file=sys.stderr)


@contextmanager
def progress(description: str, total: int | None, unit: str = "messages") -> Iterator[Callable[..., None]]:
    """A bar for ``total`` steps (None: not known yet); yields
    ``advance(n=1, total=None)``, which also sets the total when given one.
    Steps are handed to the bar at most every :data:`UPDATE_PERIOD_S` (and
    all of them at the end): an exporter advances once per message, tens of
    thousands of times, and rich's own update costs more than a message."""
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn(unit),
               TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=_console(), transient=False) as bar:
        task = bar.add_task(description, total=total)
        pending = [0, time.monotonic()]  # steps not yet handed to the bar, when they last were

        def flush() -> None:
            if pending[0]:
                bar.advance(task, pending[0])
                pending[0] = 0
            pending[1] = time.monotonic()

        def advance(n: int = 1, total: int | None = None) -> None:
            if total is not None and bar.tasks[0].total != total:
                bar.update(task, total=total)
            pending[0] += n
            if time.monotonic() - pending[1] >= UPDATE_PERIOD_S:
                flush()

        try:
            yield advance
        finally:
            flush()


def track(items: Iterable[T], description: str, total: int | None, unit: str = "messages") -> Iterator[T]:
    """``items``, with a bar advanced once per item."""
    with progress(description, total, unit) as advance:
        for item in items:
            yield item
            advance(1)


def recorded_total(manifest: dict[str, Any], topics: Iterable[str] | None = None) -> int | None:
    """Messages the manifest says the run holds (of ``topics``, default all);
    None when it does not say (a run that never closed)."""
    counts = manifest.get("topics")
    if not isinstance(counts, dict) or not counts:
        return None
    chosen = counts if topics is None else {t: counts.get(t) for t in topics}
    total = 0
    for value in chosen.values():
        value = value.get("count") if isinstance(value, dict) else value
        if not isinstance(value, int):
            return None
        total += value
    return total
