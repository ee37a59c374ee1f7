"""xr node, UDP variant: JSON controller frames from a local bridge (e.g. a PICO SDK
poller) -> ``controllers`` (XrControllers) + ``diagnostics``.

The frame format is documented in :mod:`teledora.operators.xr.xr_feed_format` and
docs/xr.md. The socket binds 127.0.0.1 by default; binding any other address
needs ``--allow-remote`` because anyone who can reach the port can drive the robot.
One sender controls at a time: datagrams from a second address are refused
(counted) until the first has been silent for ``--takeover-s``.

Args/env: ``--bind`` (XR_UDP_BIND, 127.0.0.1), ``--port`` (XR_UDP_PORT, 9870),
``--allow-remote``, ``--takeover-s`` (1.0).
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import time
from typing import Any, Callable, Sequence

from teledora.operators.errors import ConfigError
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.devices.xr.feed_loop import ReceivedFrame, run_feed
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES, FeedAssembler

DEFAULT_PORT = 9870


class RemoteBindRefused(ConfigError):
    """Binding a non-loopback address without ``--allow-remote``."""


class UdpFeedBackend:
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

    def read(self, timeout_s: float) -> list[ReceivedFrame]:
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


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="xr_udp", description=__doc__.splitlines()[0])
    ap.add_argument("--bind", default=os.environ.get("XR_UDP_BIND", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("XR_UDP_PORT", DEFAULT_PORT)))
    ap.add_argument("--allow-remote", action="store_true", help="allow binding a non-loopback address")
    ap.add_argument("--takeover-s", type=float, default=1.0)
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, backend: UdpFeedBackend | None = None) -> None:
    args = parse_args(argv)
    if backend is None:
        if not args.bind.startswith("127.") and args.bind != "localhost" and not args.allow_remote:
            raise RemoteBindRefused(f"refusing to bind {args.bind}: pass --allow-remote to accept remote senders")
        backend = UdpFeedBackend(args.bind, args.port, args.takeover_s)
    io = NodeIO(make_node(node), node_id("xr"))
    assembler = FeedAssembler("udp")

    def refresh() -> None:
        io.diag.details.update(refused_senders=backend.refused)

    if backend.sock is None:
        backend.connect()
    io.log("info", f"xr_udp listening on {backend.bind}:{backend.port}")
    run_feed(io, backend, assembler, refresh=refresh)


if __name__ == "__main__":
    main()
