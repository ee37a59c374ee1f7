"""What a scripted scenario did to an object, from its recorded true poses.

A scenario such as the pick and place moves an object and may bring it back,
so the distance at the end alone would hide the move: :func:`object_travel`
gives both the farthest the object got from where it started and where it
ended, in the horizontal plane and in height. Pure: poses in, numbers out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence


@dataclass(frozen=True)
class ObjectTravel:
    """How far one object moved over a run (m): the farthest it got from its
    first pose (3D), how far from it it ended, and its highest lift above its
    first height; ``poses`` is how many poses named it."""

    name: str
    farthest_m: float
    end_m: float
    lifted_m: float
    poses: int

    def sentence(self) -> str:
        return (f"{self.name} moved up to {self.farthest_m:.2f} m from where it started (lifted up to "
                f"{self.lifted_m:.2f} m) and ended {self.end_m:.2f} m from there")


def object_travel(messages: Iterable[Mapping[str, Sequence]], name: str) -> ObjectTravel | None:
    """The travel of object ``name`` over ``messages`` (decoded ObjectPoses,
    in time order: ``names``, ``x``, ``y``, ``z``); None when no message names it.
    A pose with a value that is not finite is left out."""
    first = last = None
    farthest = lifted = 0.0
    count = 0
    for msg in messages:
        names = list(msg.get("names", ()))
        if name not in names:
            continue
        i = names.index(name)
        p = (float(msg["x"][i]), float(msg["y"][i]), float(msg["z"][i]))
        if not all(math.isfinite(v) for v in p):
            continue
        count += 1
        first = first or p
        last = p
        farthest = max(farthest, math.dist(first, p))
        lifted = max(lifted, p[2] - first[2])
    if first is None or last is None:
        return None
    return ObjectTravel(name, farthest, math.dist(first, last), lifted, count)
