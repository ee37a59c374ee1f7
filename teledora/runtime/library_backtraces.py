"""Rust library backtraces off in dora processes unless someone asks for them.

dora's node library reports a ``next(timeout)`` that times out as an error
value. With ``RUST_BACKTRACE=1`` in the environment (a common setting in
developer shells, and one that only ought to affect panics) every such error
also captures a stack backtrace and resolves its symbols. A node that wakes
on its own deadline many times a second pays that each time: measured with
``benchmarks/tick_pacing.py``, a node waiting with ``next(timeout)`` for a
10 ms deadline used 1.29x the CPU of one paced by a timer input and held
98 MB of PSS against 48 (the symboliser maps libpython a second time and
keeps its caches); with library backtraces off, 0.99x and 48 MB. One
timeout is enough for the memory: in the full sim every node that ever
timed out held 35-50 MB more.

``RUST_LIB_BACKTRACE`` governs those library backtraces alone; panics keep
following ``RUST_BACKTRACE``. So every teledora node and every ``dora run``
teledora starts default it to ``0``, and an explicit value is left alone.
"""

from __future__ import annotations

from typing import MutableMapping

LIBRARY_BACKTRACE_ENV = "RUST_LIB_BACKTRACE"


def without_library_backtraces(env: MutableMapping[str, str]) -> MutableMapping[str, str]:
    """Sets ``RUST_LIB_BACKTRACE=0`` in ``env`` unless it is set already, and
    returns ``env``. Pass ``os.environ`` before dora is imported in this
    process, or the environment of a ``dora run`` about to start (its daemon
    and every node it spawns inherit it)."""
    env.setdefault(LIBRARY_BACKTRACE_ENV, "0")
    return env
