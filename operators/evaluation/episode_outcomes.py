"""Each episode of a recorded pick-and-place run, judged at its end.

Episode k is the k-th START mark; it ends at the next KEEP or DISCARD. At a
KEEP the object's true pose (the newest ``sim/objects`` message at or before
the mark) and the hand's gripper joint (the newest joint state by then) go to
:func:`~teledora.operators.evaluation.placement_judge.judge_placement` with
the episode's goal. An episode discarded, never ended or never started is a
failure with its reason: N episodes asked for are N trials.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from teledora.operators.evaluation.placement_judge import JudgeTolerances, Verdict, judge_placement


@dataclass(frozen=True)
class EpisodeOutcome:
    """One episode: its goal, the judge's verdict (None where there was no
    KEEP to judge at) and, without a verdict, why."""

    index: int
    goal_xy: tuple[float, float]
    verdict: Verdict | None
    note: str = ""

    @property
    def success(self) -> bool:
        return self.verdict is not None and self.verdict.success

    def sentence(self) -> str:
        return self.verdict.sentence() if self.verdict is not None else f"failure: {self.note}"


def _newest_at(stamps: Sequence[int], stamp_ns: int) -> int | None:
    i = bisect.bisect_right(stamps, stamp_ns) - 1
    return i if i >= 0 else None


def episode_windows(marks: Sequence[Mapping[str, Any]]) -> list[tuple[int, int | None]]:
    """(start, end) stamps of each START and the KEEP or DISCARD that ends it
    (None: it never ended), in order."""
    out: list[tuple[int, int | None]] = []
    for m in marks:
        if m["event"] == "start":
            out.append((int(m["stamp_ns"]), None))
        elif m["event"] in ("keep", "discard") and out and out[-1][1] is None:
            out[-1] = (out[-1][0], int(m["stamp_ns"]))
    return out


def events_in_episodes(marks: Sequence[Mapping[str, Any]], states: Sequence[Mapping[str, Any]], event: str) -> list[int]:
    """How many of ``states`` (decoded TeleopState: ``stamp_ns``, ``events``)
    inside each episode carry ``event``; an episode never ended runs to the last state."""
    counts = []
    for start, end in episode_windows(marks):
        counts.append(sum(1 for s in states if start <= int(s["stamp_ns"]) and (end is None or int(s["stamp_ns"]) <= end)
                          and event in s["events"]))
    return counts


def judge_episodes(objects: Sequence[Mapping[str, Any]], joint_states: Sequence[Mapping[str, Any]],
                   marks: Sequence[Mapping[str, Any]], goals: Sequence[tuple[float, float]], object_name: str,
                   gripper_joint: str, tol: JudgeTolerances) -> list[EpisodeOutcome]:
    """One outcome per goal. ``objects`` (decoded ObjectPoses), ``joint_states``
    (JointState) and ``marks`` (EpisodeMark) are each in time order by ``stamp_ns``."""
    obj_stamps = [int(m["stamp_ns"]) for m in objects]
    js_stamps = [int(m["stamp_ns"]) for m in joint_states]
    ends: list[tuple[str, int] | None] = []
    open_start = False
    for m in marks:
        if m["event"] == "start":
            if open_start:
                ends.append(None)  # a START with no end before the next START
            open_start = True
        elif m["event"] in ("keep", "discard") and open_start:
            ends.append((m["event"], int(m["stamp_ns"])))
            open_start = False
    if open_start:
        ends.append(None)
    out = []
    for k, goal in enumerate(goals):
        goal = (float(goal[0]), float(goal[1]))
        end = ends[k] if k < len(ends) else None
        if k >= len(ends):
            out.append(EpisodeOutcome(k, goal, None, "never started"))
        elif end is None:
            out.append(EpisodeOutcome(k, goal, None, "never ended with KEEP or DISCARD"))
        elif end[0] == "discard":
            out.append(EpisodeOutcome(k, goal, None, "discarded"))
        else:
            i = _newest_at(obj_stamps, end[1])
            names = list(objects[i]["names"]) if i is not None else []
            if object_name not in names:
                out.append(EpisodeOutcome(k, goal, None, f"no pose of {object_name} at or before its KEEP"))
                continue
            msg, j = objects[i], names.index(object_name)
            gripper = None
            g = _newest_at(js_stamps, end[1])
            if g is not None and gripper_joint in list(joint_states[g]["names"]):
                gripper = float(joint_states[g]["position"][list(joint_states[g]["names"]).index(gripper_joint)])
            verdict = judge_placement([msg["x"][j], msg["y"][j], msg["z"][j]],
                                      [msg["qx"][j], msg["qy"][j], msg["qz"][j], msg["qw"][j]], goal, gripper, tol)
            out.append(EpisodeOutcome(k, goal, verdict))
    return out
