"""Real-time scheduling for the control path's nodes, with a CPU budget.

A node listed in ``scheduling.yaml`` moves every thread of its process
(dora's transport threads included: they carry every message) to
``SCHED_FIFO`` / ``SCHED_RR`` at its priority once its dora node exists, so
that on two shared cores the sensing nodes, the cameras, the viewer and the
recorder wait for it, not the other way round.

What keeps a real-time node from starving the machine:

* ``RLIMIT_RTTIME``: the kernel counts the CPU a real-time thread uses
  without blocking; past ``cpu_budget_ms`` it sends ``SIGXCPU``, on which the
  node drops every thread back to ``SCHED_OTHER`` and reports it (diagnostics
  level ``error``, one log line). A node that waits for its inputs, as every
  node loop does, resets the count at each wait;
* the kernel's real-time throttling (``/proc/sys/kernel/sched_rt_runtime_us``,
  950 ms in each second by default) leaves the rest of every second to normal
  tasks whatever happens.

A refusal (no root, ``CAP_SYS_NICE`` or ``RLIMIT_RTPRIO``) is reported the way
the recorder's priority is: once, and the node runs on unprioritised.
"""

from __future__ import annotations

import os
import resource
import signal
from dataclasses import dataclass, field
from typing import Any, Callable

from teledora.operators.dataflow.node_scheduling import NodeScheduling, SchedulingConfig

SCHEDULING_ENV = "TELEDORA_SCHEDULING"
_POLICIES = {"fifo": os.SCHED_FIFO, "rr": os.SCHED_RR}


@dataclass
class SchedulingReport:
    """What happened to one process's scheduling."""

    wanted: str = "normal"  # "fifo 80", "rr 70" or "normal"
    applied: str = "normal"
    problem: str = ""  # why it was refused, or why it was given up
    demoted: bool = False  # the CPU budget ran out and the node dropped to normal
    threads: int = 0
    listeners: list[Callable[["SchedulingReport"], None]] = field(default_factory=list, repr=False)

    def as_details(self) -> dict[str, Any]:
        return {"wanted": self.wanted, "applied": self.applied, "problem": self.problem, "demoted": self.demoted}


def load_scheduling() -> SchedulingConfig | None:
    """The scheduling table of this run: ``TELEDORA_SCHEDULING`` names a file
    (or a shipped name), ``off`` disables it, unset is the shipped table."""
    from teledora.models.config_files import load_scheduling_config

    choice = os.environ.get(SCHEDULING_ENV, "").strip()
    if choice.lower() == "off":
        return None
    return load_scheduling_config(choice or None)


def _threads(pid: int | str = "self") -> list[int]:
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return [0]  # no /proc: the calling thread is all we can reach


def set_process_policy(policy: int, priority: int, pid: int | str = "self", reset_on_fork: bool = False) -> int:
    """Sets every thread of a process to ``policy`` at ``priority``; returns how
    many threads were set. ``reset_on_fork``: children start time-sharing.

    Raises:
        PermissionError: the OS refuses the policy or priority.
    """
    flags = os.SCHED_RESET_ON_FORK if reset_on_fork else 0
    count = 0
    for tid in _threads(pid):
        try:
            os.sched_setscheduler(tid, policy | flags, os.sched_param(priority))
            count += 1
        except ProcessLookupError:
            pass  # the thread ended meanwhile
    return count


def apply_node_scheduling(wanted: NodeScheduling | None, cpu_budget_ms: float,
                          on_change: Callable[[SchedulingReport], None] | None = None) -> SchedulingReport:
    """Moves this process to its real-time policy, with the CPU budget guard.

    Returns the report; ``on_change`` is called (from the signal handler) if
    the budget runs out later and the process is demoted."""
    report = SchedulingReport()
    if wanted is None:
        return report
    report.wanted = f"{wanted.policy} {wanted.priority}"
    budget_us = int(cpu_budget_ms * 1000)
    try:
        # the budget first: a thread is never real-time without its guard
        _, hard = resource.getrlimit(resource.RLIMIT_RTTIME)
        hard_us = resource.RLIM_INFINITY if hard == resource.RLIM_INFINITY else max(hard, budget_us)
        resource.setrlimit(resource.RLIMIT_RTTIME, (budget_us, hard_us))
        _install_demotion(report, on_change)
        report.threads = set_process_policy(_POLICIES[wanted.policy], wanted.priority)
    except (PermissionError, OSError, ValueError) as exc:
        report.problem = f"cannot run under SCHED_{wanted.policy.upper()} {wanted.priority}: {getattr(exc, 'strerror', None) or exc}"
        return report
    report.applied = report.wanted
    return report


def schedule_process(pid: int, wanted: NodeScheduling | None) -> SchedulingReport:
    """Moves every thread of another process (dora's) to ``wanted``; threads
    it starts later inherit the policy. No CPU budget: a router waits for
    messages as a node waits for input."""
    report = SchedulingReport()
    if wanted is None:
        return report
    report.wanted = f"{wanted.policy} {wanted.priority}"
    try:
        report.threads = set_process_policy(_POLICIES[wanted.policy], wanted.priority, pid)
    except (PermissionError, OSError) as exc:
        report.problem = f"cannot run dora under SCHED_{wanted.policy.upper()} {wanted.priority}: {getattr(exc, 'strerror', None) or exc}"
        return report
    report.applied = report.wanted
    return report


def time_share() -> None:
    """Puts every thread of this process back to normal scheduling if it
    inherited a real-time policy (a node that dora, itself real-time, started
    after the dataflow began)."""
    if os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR):
        set_process_policy(os.SCHED_OTHER, 0)


def _install_demotion(report: SchedulingReport, on_change: Callable[[SchedulingReport], None] | None) -> None:
    def demote(signum: int, frame: Any) -> None:
        try:
            set_process_policy(os.SCHED_OTHER, 0)
        except OSError:
            pass
        report.applied = "normal"
        report.demoted = True
        report.problem = "real-time CPU budget ran out (no wait for input within it): dropped to normal scheduling"
        if on_change is not None:
            on_change(report)

    signal.signal(signal.SIGXCPU, demote)
