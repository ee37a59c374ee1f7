"""Lowering a whole node process's CPU priority, dora's threads included.

Linux keeps a nice value per thread: ``os.nice`` changes only the calling
thread's, and a new thread starts with its creator's. A node that lowers its
priority after ``make_node`` has therefore left dora's transport threads
(they receive and send every message) and pyarrow's, started at import, at
the old value; on busy cores those threads still compete with the control
path as before. :func:`lower_priority` sets every thread of the process.
"""

from __future__ import annotations

import os

NICE_MAX = 19  # the lowest priority Linux has


def lower_priority(steps: int) -> int:
    """Raises the nice value of every thread of this process by ``steps``
    (a lower priority; no privilege needed) and returns the calling thread's
    new value. Threads started afterwards by the calling thread inherit it;
    a thread already lower than that is left where it is.

    Raises:
        ValueError: ``steps`` is negative (raising a priority needs privileges
            and is the recorder's own setting, docs/recording.md).
    """
    if steps < 0:
        raise ValueError(f"cannot lower a priority by {steps} steps")
    if steps == 0:
        return os.nice(0)
    target = os.nice(steps)
    for tid in _threads():
        try:
            if os.getpriority(os.PRIO_PROCESS, tid) < target:
                os.setpriority(os.PRIO_PROCESS, tid, target)
        except OSError:
            pass  # the thread ended meanwhile
    return target


def thread_nice_values() -> dict[int, int]:
    """The nice value of every thread of this process, by thread id."""
    out = {}
    for tid in _threads():
        try:
            out[tid] = os.getpriority(os.PRIO_PROCESS, tid)
        except OSError:
            pass
    return out


def _threads() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return []  # no /proc: the calling thread's change is all there is
