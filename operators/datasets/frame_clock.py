"""Putting asynchronous streams on one fixed frame clock.

A recorded run holds each stream at its own rate (joint states at 90 Hz,
commands at the teleop rate, camera images at the renderer's rate). A training
dataset has one row per frame at a fixed rate. These functions pick, for every
frame time, which sample of a stream the frame holds.

Rules (docs/datasets.md, "Alignment"):

* ``latest``: the latest sample sent at or before the frame time (what a
  policy running at that instant could have seen). Observations use it.
* ``latest`` at ``frame time + one period``: the command in force at the end of
  the frame's interval, i.e. the last one issued before the next frame.
  Actions use it (an action is what the robot was told to do after the frame's
  observation).

A frame before a stream's first sample has no sample (index -1); the export
starts an episode at the first frame where every stream it needs has one.
"""

from __future__ import annotations

import math

import numpy as np

NS_PER_S = 1_000_000_000


def frame_times_ns(start_ns: int, end_ns: int, fps: float) -> np.ndarray:
    """Frame times ``start + k / fps`` (ns, int64) for every k with time <= end."""
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"fps must be a positive number, got {fps!r}")
    if end_ns < start_ns:
        return np.zeros(0, dtype=np.int64)
    n = int(math.floor((end_ns - start_ns) * fps / NS_PER_S + 1e-9)) + 1
    k = np.arange(n, dtype=np.int64)
    # integer arithmetic where fps is whole, so frame k sits exactly at k/fps
    if float(fps).is_integer():
        return start_ns + (k * NS_PER_S) // int(fps)
    return start_ns + np.round(k * (NS_PER_S / fps)).astype(np.int64)


def latest_at_or_before(sample_ns: np.ndarray, query_ns: np.ndarray) -> np.ndarray:
    """For each query time, the index of the latest sample at or before it (-1: none).

    ``sample_ns`` must be sorted ascending (ties keep the later sample).
    """
    sample_ns = np.asarray(sample_ns, dtype=np.int64)
    if sample_ns.size > 1 and np.any(np.diff(sample_ns) < 0):
        raise ValueError("sample times must be sorted")
    return np.searchsorted(sample_ns, np.asarray(query_ns, dtype=np.int64), side="right").astype(np.int64) - 1


def sorted_order(sample_ns: np.ndarray) -> np.ndarray:
    """A stable order that sorts samples by time (recorded order breaks ties)."""
    return np.argsort(np.asarray(sample_ns, dtype=np.int64), kind="stable")


def sample_age_ns(sample_ns: np.ndarray, query_ns: np.ndarray, index: np.ndarray) -> np.ndarray:
    """How old each chosen sample is at its frame time (ns; -1 where there is none)."""
    sample_ns = np.asarray(sample_ns, dtype=np.int64)
    out = np.full(len(index), -1, dtype=np.int64)
    ok = index >= 0
    out[ok] = np.asarray(query_ns, dtype=np.int64)[ok] - sample_ns[index[ok]]
    return out
