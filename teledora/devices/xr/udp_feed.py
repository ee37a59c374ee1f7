"""XR feed over UDP: authenticated JSON controller frames from a bridge (e.g. a
PICO SDK poller) or the replay tool.

Every datagram is an envelope (:mod:`teledora.operators.xr.udp_envelope`):
HMAC-SHA256 with a key from the pairing token over this run's random nonce, a
sender session, a strictly increasing sequence number, the send time and the
frame. A sender learns the nonce with an authenticated hello, which the
receiver answers from the socket; a frame sealed for an earlier run (captured
before a restart) is refused and answered with a rehello, so a live sender
pairs again. Datagrams that do not verify, replays and stale ones are refused
and counted before their payload is read.

:class:`UdpFeedSender` is the sending end (``teledora xr send-udp``, bridges
written in Python, the tests' peers).

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
from teledora.operators.errors import DeviceError
from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.headset_clock import HOST_CLOCK
from teledora.operators.xr.udp_envelope import (
    MAX_DATAGRAM_BYTES,
    Answer,
    EnvelopeOpener,
    ForeignNonce,
    SenderLink,
    feed_key,
)

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
        self.opener = EnvelopeOpener(feed_key(token))  # a fresh nonce per instance: per run
        self.sock: socket.socket | None = None
        self.hellos_answered = 0
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
            except ForeignNonce as exc:
                self._answer(exc.reply, addr)  # before counting: once counted, the answer is on its way
                self.reject(exc.reason)
                continue
            except FeedRejected as exc:
                self.reject(exc.reason)
                continue
            if isinstance(opened, Answer):
                self.hellos_answered += 1
                self._answer(opened.reply, addr)
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

    def _answer(self, reply: bytes, addr: Any) -> None:
        assert self.sock is not None
        try:  # never larger than what it answers, so no amplification to a forged source
            self.sock.sendto(reply, addr)
        except OSError:  # a full send buffer or an unreachable peer: the sender asks again
            pass

    def write(self, message: dict[str, Any]) -> None:
        """UDP senders get no display messages (the bridge has no display)."""

    def diagnostics_details(self) -> dict[str, Any]:
        return {"refused_senders": self.refused, "sender": self._owner_peer, "sessions_remembered": self.opener.sessions,
                "hellos_answered": self.hellos_answered}

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class PairingFailed(DeviceError):
    """No welcome came back from the receiver (not running, another token, or unreachable)."""


class UdpFeedSender:
    """Sends feed frames to a UDP feed receiver, pairing with it first and
    again whenever the receiver says it restarted.

    Args:
        host: The receiver's address.
        port: The receiver's port.
        token: The receiver's pairing token.
        clock: Host clock (ns), for the send stamps.
        pair_timeout_s: How long :meth:`pair` tries before it gives up.
        resend_s: How long a hello waits for its welcome before it is sent again.
    """

    def __init__(self, host: str, port: int, token: str, clock: Callable[[], int] = time.time_ns,
                 pair_timeout_s: float = 5.0, resend_s: float = 0.1) -> None:
        self.addr, self.clock = (host, port), clock
        self.pair_timeout_s, self.resend_s = pair_timeout_s, resend_s
        self.link = SenderLink(feed_key(token))
        self.pairings = 0
        self.sock: socket.socket | None = None

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(self.addr)  # only the receiver's datagrams come back
        self.sock.setblocking(False)

    def pair(self) -> None:
        """Learns the receiver's nonce.

        Raises:
            PairingFailed: no welcome within ``pair_timeout_s``.
        """
        assert self.sock is not None, "connect() first"
        deadline = time.monotonic() + self.pair_timeout_s
        while time.monotonic() < deadline:
            try:
                self.sock.send(self.link.hello(self.clock()))
            except OSError:  # e.g. the receiver's port not open yet (ICMP): try again
                pass
            if self._take_replies(min(self.resend_s, max(0.0, deadline - time.monotonic()))):
                self.pairings += 1
                return
        raise PairingFailed(f"no welcome from the XR UDP receiver at {self.addr[0]}:{self.addr[1]} within "
                            f"{self.pair_timeout_s:g} s (is it running, with this token?)")

    def send(self, payload: bytes, seq: int | None = None) -> bytes:
        """Seals and sends one frame (pairing first when needed); returns the datagram."""
        assert self.sock is not None, "connect() first"
        self._take_replies(0.0)
        if not self.link.paired:
            self.pair()
        datagram = self.link.seal(payload, self.clock(), seq)
        try:
            self.sock.send(datagram)
        except OSError:  # a datagram lost like any other on UDP; the next one goes on
            pass
        return datagram

    def _take_replies(self, wait_s: float) -> bool:
        """Reads what the receiver sent back, waiting up to ``wait_s`` for it;
        True once a welcome paired the link."""
        assert self.sock is not None
        deadline = time.monotonic() + wait_s
        while True:
            try:
                data = self.sock.recv(MAX_DATAGRAM_BYTES)
            except (BlockingIOError, InterruptedError):
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                    return False
                continue
            except OSError:  # an ICMP error from an earlier send: nothing to read
                continue
            if self.link.take(data) == "paired":
                return True

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
