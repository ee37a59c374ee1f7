"""The sender's clock (a headset page, a bridge) mapped onto the host clock.

Model: ``host = sender + offset``, known to within ``± uncertainty``.

* **Round trips** (the WebXR page): the host sends a ping at host time ``t1``;
  the page answers with its clock ``p``; the answer arrives at ``t3``. The
  page read its clock somewhere in ``[t1, t3]`` (host time), so
  ``offset = (t1 + t3) / 2 - p`` is exact to within ``(t3 - t1) / 2``
  whatever the split of the delay between the two directions. Of the round
  trips of the last :data:`WINDOW_NS`, the one with the smallest bound now
  wins (queueing only ever lengthens a round trip). Away from that round
  trip the bound grows by :data:`DRIFT_PPM` of the time between it and the
  instant mapped, for the two clocks' relative drift. Round trips older than
  the window are forgotten, so a stepped host clock is followed within the
  window.
* **Host clock** (the UDP feed): the sender stamps with the host's own clock
  (same machine, or clocks synchronised by NTP/PTP): offset 0, uncertainty 0.
  :data:`HOST_CLOCK`.

A sample stamp ``s`` maps to the earliest host time it can stand for,
``s + offset - uncertainty``: its age on the host is never underestimated,
so a staleness rule applied to it can only act early, never late.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

WINDOW_NS = 10_000_000_000
#: Relative drift allowed between the two clocks: NTP slews a clock by at most
#: 500 ppm; free-running quartz is within tens of ppm.
DRIFT_PPM = 500.0
#: A round trip longer than this says nothing useful and is ignored.
MAX_ROUND_TRIP_NS = 2_000_000_000


@dataclass(frozen=True)
class ClockEstimate:
    """``host_ns = sender_ns + offset_ns``, wrong by at most ``uncertainty_ns``
    at host time ``reference_ns``, and by ``drift_ppm`` more per unit of time
    away from it."""

    offset_ns: int
    uncertainty_ns: int
    reference_ns: int = 0
    drift_ppm: float = 0.0

    def uncertainty_at(self, host_ns: int) -> int:
        """The bound on the offset's error at host time ``host_ns``."""
        return self.uncertainty_ns + int(self.drift_ppm * 1e-6 * abs(host_ns - self.reference_ns)) + (1 if self.drift_ppm else 0)

    def earliest_host_ns(self, sender_ns: int) -> int:
        """The earliest host time the sender's ``sender_ns`` can stand for."""
        approx = sender_ns + self.offset_ns
        if not self.drift_ppm:
            return approx - self.uncertainty_ns
        # the drift term is taken at the farthest the true time can be from the reference
        first = self.uncertainty_at(approx)
        return approx - self.uncertainty_at(approx + (first if approx >= self.reference_ns else -first))


#: The sender stamps with the host's clock.
HOST_CLOCK = ClockEstimate(0, 0)


class HeadsetClock:
    """Keeps the round trips of one sender and answers the best current estimate.

    Args:
        window_ns: How long a round trip is kept.
        drift_ppm: Growth of the uncertainty with the age of the round trip used.
    """

    def __init__(self, window_ns: int = WINDOW_NS, drift_ppm: float = DRIFT_PPM) -> None:
        self.window_ns = int(window_ns)
        self.drift_ppm = float(drift_ppm)
        self._trips: deque[tuple[int, int, int, int]] = deque()  # (host receive, offset, bound, mid-point) ns
        self.round_trips = 0

    def add_round_trip(self, host_sent_ns: int, sender_ns: int, host_received_ns: int) -> bool:
        """Records one ping/pong; False (and ignored) when the round trip is
        negative or longer than :data:`MAX_ROUND_TRIP_NS`."""
        rtt = int(host_received_ns) - int(host_sent_ns)
        if not 0 <= rtt <= MAX_ROUND_TRIP_NS:
            return False
        mid = (int(host_sent_ns) + int(host_received_ns)) // 2
        offset = mid - int(sender_ns)
        half = (rtt + 1) // 2 + 1  # rounded up, plus the 1 ns the floor division above may lose
        # the page read its clock within `half` of `mid`: the drift over that span is part of the bound
        half += int(self.drift_ppm * 1e-6 * half) + 1
        self._trips.append((int(host_received_ns), offset, half, mid))
        self.round_trips += 1
        return True

    def estimate(self, now_ns: int) -> ClockEstimate | None:
        """The tightest estimate at host time ``now_ns``; None without a round
        trip in the last window."""
        while self._trips and now_ns - self._trips[0][0] > self.window_ns:
            self._trips.popleft()
        best: ClockEstimate | None = None
        for _, offset, half, mid in self._trips:
            candidate = ClockEstimate(offset, half, mid, self.drift_ppm)
            if best is None or candidate.uncertainty_at(now_ns) < best.uncertainty_at(now_ns):
                best = candidate
        return best
