"""When a replayed message goes out: recorded send times mapped onto wall time."""

from __future__ import annotations


class ReplaySpeedError(ValueError):
    """A replay speed that is not a number >= 0."""


class ReplaySchedule:
    """Maps recorded send times onto replay wall time.

    Args:
        run_t0_ns: Recorded time that maps to ``start_ns`` (the run's first message).
        start_ns: Replay wall time of ``run_t0_ns``.
        speed: 1.0 = original timing, 2.0 = twice as fast, 0 = no waiting.
    """

    def __init__(self, run_t0_ns: int, start_ns: int, speed: float) -> None:
        if speed < 0:
            raise ReplaySpeedError(f"speed must be >= 0, got {speed}")
        self.run_t0_ns = int(run_t0_ns)
        self.start_ns = int(start_ns)
        self.speed = float(speed)

    def due_ns(self, recorded_ns: int) -> int:
        """Wall time at which a message recorded at ``recorded_ns`` is sent."""
        if self.speed == 0:
            return self.start_ns
        return self.start_ns + int((recorded_ns - self.run_t0_ns) / self.speed)

    def shifted(self, by_ns: int) -> "ReplaySchedule":
        """The same schedule, ``by_ns`` of replay wall time later (next loop)."""
        return ReplaySchedule(self.run_t0_ns, self.start_ns + by_ns, self.speed)
