"""When a lidar node (re)connects, restarts its scan, or gives up.

The rules, in one place so the node only asks "what now?":

* The first connect, and every reopening of the port, waits the unit's
  ``power_up_delay_s`` first: reopening spins the motor up, and two A1 motors
  spinning up together on one hub brown it out. Both units fail together when
  the hub does, and with equal back-offs the stagger between them holds.
* After a fault the next attempt waits a back-off that doubles from
  ``backoff_initial_s`` up to ``backoff_max_s``. Up to ``reopen_after - 1``
  faults in a row restart the scan on the open port; from then on (or when the
  port itself failed) the port is reopened.
* ``max_restarts`` attempts in a row may fail (a fault before the next
  complete turn); the fault after that spends the budget: the policy gives up
  and stays given up, and the node stays in error until it is restarted.
  A complete turn resets the count.
"""

from __future__ import annotations

from dataclasses import dataclass

CONNECT = "connect"
RESTART_SCAN = "restart_scan"


@dataclass(frozen=True)
class Attempt:
    """The next action and when it is due (host ns)."""

    action: str
    due_ns: int


class RestartPolicy:
    """Schedules connects and restarts after faults, within a budget.

    Args:
        max_restarts: Failed recovery attempts in a row tolerated before giving up.
        power_up_delay_s: Wait before every connect (the staggered spin-up).
        backoff_initial_s: Back-off after the first fault.
        backoff_max_s: Longest back-off.
        reopen_after: Faults in a row from which the port is reopened rather
            than the scan restarted.
    """

    def __init__(self, max_restarts: int, power_up_delay_s: float, backoff_initial_s: float = 0.4,
                 backoff_max_s: float = 5.0, reopen_after: int = 3) -> None:
        if max_restarts < 0 or power_up_delay_s < 0 or not 0 < backoff_initial_s <= backoff_max_s or reopen_after < 1:
            raise ValueError("bad restart policy limits")
        self.max_restarts = max_restarts
        self.power_up_delay_ns = int(power_up_delay_s * 1e9)
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self.reopen_after = reopen_after
        self.failures = 0  # faults since the last complete turn
        self.gave_up = False
        self.pending: Attempt | None = None

    def start(self, now_ns: int) -> Attempt:
        """The first connect, after the power-up delay."""
        self.pending = Attempt(CONNECT, now_ns + self.power_up_delay_ns)
        return self.pending

    def backoff_s(self) -> float:
        return min(self.backoff_initial_s * 2 ** max(self.failures - 1, 0), self.backoff_max_s)

    def fault(self, now_ns: int, port_lost: bool) -> Attempt | None:
        """A fault happened; returns the next attempt, or None once the budget is spent."""
        self.failures += 1
        if self.failures > self.max_restarts:
            self.gave_up = True
            self.pending = None
            return None
        due = now_ns + int(self.backoff_s() * 1e9)
        if port_lost or self.failures >= self.reopen_after:
            self.pending = Attempt(CONNECT, due + self.power_up_delay_ns)
        else:
            self.pending = Attempt(RESTART_SCAN, due)
        return self.pending

    def due(self, now_ns: int) -> str | None:
        """The action to run now, if one is due (it is then no longer pending)."""
        if self.pending is None or now_ns < self.pending.due_ns:
            return None
        action, self.pending = self.pending.action, None
        return action

    def turn_completed(self) -> None:
        """A complete turn came in: the budget is whole again."""
        self.failures = 0
