"""XR feed over UDP: JSON controller frames from a local bridge (e.g. a PICO SDK poller).

One sender controls at a time: datagrams from a second address are refused
(counted in ``refused``) until the first has been silent for ``takeover_s``.
"""

from __future__ import annotations

import select
import socket
import time
from typing import Any, Callable

from teledora.devices.xr.feed_device import FeedDevice, ReceivedFrame
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES

DEFAULT_PORT = 9870


class UdpFeedBackend(FeedDevice):
    """Receives feed datagrams; one sender address controls at a time.

    Args:
        bind: Local address.
        port: UDP port (0 picks a free one; see ``port`` after ``connect``).
        takeover_s: Silence after which another sender may take control.
        clock: Host clock (ns).
    """

    def __init__(self, bind: str = "127.0.0.1", port: int = DEFAULT_PORT, takeover_s: float = 1.0,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.bind, self.port, self.takeover_ns, self.clock = bind, port, int(takeover_s * 1e9), clock
        self.sock: socket.socket | None = None
        self.refused = 0
        self._owner: tuple[str, int] | None = None
        self._owner_last_ns = 0
        self._client = 0

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((self.bind, self.port))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def read(self, timeout_s: float = 0.0) -> list[ReceivedFrame]:
        assert self.sock is not None, "connect() first"
        ready, _, _ = select.select([self.sock], [], [], timeout_s)
        frames: list[ReceivedFrame] = []
        while ready:
            try:
                data, addr = self.sock.recvfrom(MAX_FRAME_BYTES + 1)
            except BlockingIOError:
                break
            now = self.clock()
            if self._owner != addr:
                if self._owner is not None and now - self._owner_last_ns < self.takeover_ns:
                    self.refused += 1
                    continue
                self._owner = addr
                self._client += 1
            self._owner_last_ns = now
            frames.append(ReceivedFrame(data, f"{addr[0]}:{addr[1]}", self._client, now))
        return frames

    def write(self, message: dict[str, Any]) -> None:
        """UDP senders get nothing back (the bridge has no display)."""

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
