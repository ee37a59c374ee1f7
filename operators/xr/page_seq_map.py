"""Which of the page's own frames a teleop state reflects: how the page learns that
its stop press was applied.

The xr node numbers its controllers reports itself (XrControllers ``seq``);
teleop's state carries the newest report it applied (dora metadata ``xr_seq``),
and teleop applies every report in order. The page numbers its frames with its
own ``seq``. :class:`PageSeqMap` remembers, for the controlling client, which
page frame each recent report came from, so the state forwarded to the page can
say ``page_seq``: teleop has applied every frame of this page up to that one.
A page that sent its stop in frame ``n`` and then receives a latched state with
``page_seq >= n`` knows the stop is latched after its press.
"""

from __future__ import annotations

from collections import deque

#: Reports remembered: several seconds at the page's frame rate, far more than
#: teleop ever lags behind (an older ``xr_seq`` maps to nothing).
KEEP = 1024


class PageSeqMap:
    """Report ``seq`` -> the page frame ``seq`` it came from, for the newest ``keep`` reports.

    Args:
        keep: How many reports to remember.
    """

    def __init__(self, keep: int = KEEP) -> None:
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self._pairs: deque[tuple[int, int]] = deque(maxlen=keep)

    def clear(self) -> None:
        """A new controlling client: its frames are numbered afresh."""
        self._pairs.clear()

    def add(self, report_seq: int, page_seq: int) -> None:
        """The report numbered ``report_seq`` was built from page frame ``page_seq``
        (reports are added in the order they were published)."""
        if self._pairs and report_seq <= self._pairs[-1][0]:
            raise ValueError(f"report seq {report_seq} is not after {self._pairs[-1][0]}")
        self._pairs.append((int(report_seq), int(page_seq)))

    def page_seq(self, applied_seq: object) -> int | None:
        """The page frame of the newest remembered report at or before ``applied_seq``
        (teleop's ``xr_seq``), or None when ``applied_seq`` is not an integer or is
        older than every remembered report (nothing can be said about it)."""
        if type(applied_seq) is not int or not self._pairs or applied_seq < self._pairs[0][0]:
            return None
        for report_seq, page_seq in reversed(self._pairs):  # teleop is usually a report or two behind
            if report_seq <= applied_seq:
                return page_seq
        return None
