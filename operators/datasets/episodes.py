"""Episode boundaries from the operator's marks.

The operator marks episodes while teleoperating: ``start`` (with a task text),
``keep`` (stop and keep) and ``discard`` (stop and throw away). The marks are
recorded as a topic; this module turns the sequence of marks into episodes.

Rules:

* ``start`` while an episode is open closes the open one as kept at that
  instant and opens the next (one chord press per demonstration is enough);
* ``keep``/``discard`` with no open episode do nothing (reported as ignored);
* an episode still open when the run ends is kept, ending at the run's end,
  and says so (``closed_by="end of run"``);
* no marks at all: the whole run is one episode (``closed_by="whole run"``)
  with the default task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

EVENTS = ("start", "keep", "discard")


@dataclass(frozen=True)
class EpisodeMark:
    """One mark as recorded."""

    stamp_ns: int
    event: str
    task: str = ""


@dataclass(frozen=True)
class Episode:
    start_ns: int
    end_ns: int
    task: str
    closed_by: str  # "keep", "start" (next one began), "end of run", "whole run"


@dataclass
class EpisodeSplit:
    episodes: list[Episode] = field(default_factory=list)
    discarded: list[Episode] = field(default_factory=list)
    ignored: list[EpisodeMark] = field(default_factory=list)


def split_episodes(marks: Iterable[EpisodeMark], run_start_ns: int, run_end_ns: int, default_task: str) -> EpisodeSplit:
    """Kept and discarded episodes of a run from its marks (sorted by time here)."""
    out = EpisodeSplit()
    ordered = sorted(marks, key=lambda m: m.stamp_ns)
    if not ordered:
        out.episodes.append(Episode(run_start_ns, run_end_ns, default_task, "whole run"))
        return out
    open_start: int | None = None
    open_task = default_task
    for mark in ordered:
        if mark.event not in EVENTS:
            out.ignored.append(mark)
            continue
        if mark.event == "start":
            if open_start is not None:
                out.episodes.append(Episode(open_start, mark.stamp_ns, open_task, "start"))
            open_start, open_task = mark.stamp_ns, (mark.task or default_task)
        elif open_start is None:
            out.ignored.append(mark)
        else:
            ep = Episode(open_start, mark.stamp_ns, open_task, mark.event)
            (out.episodes if mark.event == "keep" else out.discarded).append(ep)
            open_start = None
    if open_start is not None:
        out.episodes.append(Episode(open_start, max(open_start, run_end_ns), open_task, "end of run"))
    return out
