"""xr node, UDP variant: JSON controller frames from a local bridge (e.g. a PICO SDK
poller) -> ``controllers`` (XrControllers) + ``diagnostics``.

The frame format is documented in :mod:`teledora.operators.xr.xr_feed_format` and
docs/xr.md. The socket binds 127.0.0.1 by default; binding any other address
needs ``--allow-remote`` because anyone who can reach the port can drive the robot.
One sender controls at a time: datagrams from a second address are refused
(counted) until the first has been silent for ``--takeover-s``. The socket is
the device :class:`teledora.devices.xr.udp_feed.UdpFeedBackend`.

Args/env: ``--bind`` (XR_UDP_BIND, 127.0.0.1), ``--port`` (XR_UDP_PORT, 9870),
``--allow-remote``, ``--takeover-s`` (1.0).
"""

from __future__ import annotations

import argparse
import os
from typing import Any, Sequence

from teledora.operators.errors import ConfigError
from teledora.devices.xr.feed_loop import run_feed
from teledora.devices.xr.udp_feed import DEFAULT_PORT, UdpFeedBackend
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.xr.xr_feed_format import FeedAssembler


class RemoteBindRefused(ConfigError):
    """Binding a non-loopback address without ``--allow-remote``."""


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
    io = NodeIO(make_node(node), node_id("xr"), ends_with=())  # a feed runs until STOP
    assembler = FeedAssembler("udp")

    def refresh() -> None:
        io.diag.details.update(refused_senders=backend.refused)

    if backend.sock is None:
        backend.connect()
    io.log("info", f"xr_udp listening on {backend.bind}:{backend.port}")
    run_feed(io, backend, assembler, refresh=refresh)


if __name__ == "__main__":
    main()
