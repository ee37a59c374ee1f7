"""XR feed over UDP: authenticated JSON controller frames from a bridge (e.g. a
PICO SDK poller) or the replay tool.

Every datagram is an envelope (:mod:`teledora.operators.xr.udp_envelope`):
HMAC-SHA256 with a key from the pairing token over a sender session, a
strictly increasing sequence number, the send time and the frame. Datagrams
that do not verify, replays and stale ones are refused and counted before
their payload is read.

One sender session controls at a time: the first authenticated one takes
control; another is refused (``refused_sender``) as long as the controlling
one is alive, i.e. has sent within ``takeover_s``. After that silence another
session may take control, and the loop reports the old client gone before
the new one's first frame.

The sender stamps with the host's clock (same machine, or clocks kept in
step by NTP/PTP): frames carry :data:`~teledora.operators.xr.headset_clock.HOST_CLOCK`.
"""

from __future__ import annotations

import select
import socket
import time
from typing import Any, Callable

from teledora.devices.xr.feed_device import FeedDevice, ReceivedFrame
from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.headset_clock import HOST_CLOCK
from teledora.operators.xr.udp_envelope import MAX_DATAGRAM_BYTES, EnvelopeOpener, feed_key

DEFAULT_PORT = 9870
_MAX_PER_READ = 256  # datagrams taken per read, so a flood cannot starve the node's event loop


class UdpFeedBackend(FeedDevice):
    """Receives feed datagrams; one authenticated sender session controls at a time.

    Args:
        bind: Local address.
        port: UDP port (0 picks a free one; see ``port`` after ``connect``).
        token: The pairing token the senders' MACs are keyed with.
        takeover_s: Silence after which another sender session may take control.
        clock: Host clock (ns).
    """

    def __init__(self, bind: str = "127.0.0.1", port: int = DEFAULT_PORT, token: str = "", takeover_s: float = 1.0,
                 clock: Callable[[], int] = time.time_ns) -> None:
        super().__init__()
        self.bind, self.port, self.takeover_ns, self.clock = bind, port, int(takeover_s * 1e9), clock
        self.opener = EnvelopeOpener(feed_key(token))
        self.sock: socket.socket | None = None
        self._owner: bytes | None = None
        self._owner_peer = ""
        self._owner_last_ns = 0
        self._client = 0

    @property
    def refused(self) -> int:
        """Datagrams refused because another sender session is in control."""
        return self.rejections().get("refused_sender", 0)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:  # room for bursts (1 MiB, about 250 frames of the largest size); the kernel may cap it
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        except OSError:
            pass
        self.sock.bind((self.bind, self.port))
        self.sock.setblocking(False)
        self.port = self.sock.getsockname()[1]

    def read(self, timeout_s: float = 0.0) -> list[ReceivedFrame]:
        assert self.sock is not None, "connect() first"
        ready, _, _ = select.select([self.sock], [], [], timeout_s)
        frames: list[ReceivedFrame] = []
        for _ in range(_MAX_PER_READ if ready else 0):
            try:
                data, addr = self.sock.recvfrom(MAX_DATAGRAM_BYTES + 1)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:  # e.g. an ICMP error reported on the socket: not a datagram
                continue
            now = self.clock()
            try:
                opened = self.opener.open(data, now)
            except FeedRejected as exc:
                self.reject(exc.reason)
                continue
            if opened.session != self._owner:
                if self._owner is not None and now - self._owner_last_ns < self.takeover_ns:
                    self.reject("refused_sender")
                    continue
                self._owner = opened.session
                self._client += 1
            peer = f"{addr[0]}:{addr[1]}"
            self._owner_peer, self._owner_last_ns = peer, now
            frames.append(ReceivedFrame(opened.payload, peer, self._client, now, HOST_CLOCK))
        return frames

    def write(self, message: dict[str, Any]) -> None:
        """UDP senders get nothing back (the bridge has no display)."""

    def diagnostics_details(self) -> dict[str, Any]:
        return {"refused_senders": self.refused, "sender": self._owner_peer, "sessions_remembered": self.opener.sessions}

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
