"""What every XR feed device delivers: raw frames from the headset side.

A feed device (UDP datagrams from a bridge, WebSocket messages from the
headset page) is read as a list of :class:`ReceivedFrame` and written display
messages for the operator (dicts, sent as JSON where the feed has a way back).
What it refuses itself (a datagram without a valid MAC, a socket without a
hello) it counts by reason in :meth:`FeedDevice.rejections`; the feed loop
adds those to the node's diagnostics.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

from teledora.devices.device import Device
from teledora.operators.xr.headset_clock import ClockEstimate


@dataclass(frozen=True)
class ReceivedFrame:
    """One frame as a feed device received it, or the news that its client left.

    ``clock`` maps the sender's stamps to the host clock (None while the
    device has no estimate for this sender). A ``disconnect`` carries no data:
    the controlling client is gone.
    """

    data: bytes
    peer: str
    client: int  # changes when a different client takes control
    recv_ns: int
    clock: ClockEstimate | None = None
    disconnect: bool = False


class FeedDevice(Device):
    """An XR feed: ``read`` waits up to ``timeout_s`` for frames, ``write``
    sends a display message to the controlling client (if the feed can)."""

    def __init__(self) -> None:
        self._rejections: Counter[str] = Counter()
        self._rejections_lock = threading.Lock()  # a device may count from its own I/O thread

    def reject(self, reason: str) -> None:
        """Counts one input the device itself refused (a reason of
        :data:`~teledora.operators.xr.feed_rejection.REASONS`)."""
        with self._rejections_lock:
            self._rejections[reason] += 1

    def rejections(self) -> Mapping[str, int]:
        """How many inputs the device refused so far, by reason."""
        with self._rejections_lock:
            return dict(self._rejections)

    @abstractmethod
    def read(self, timeout_s: float = 0.0) -> list[ReceivedFrame]: ...

    @abstractmethod
    def write(self, message: dict[str, Any]) -> None: ...
