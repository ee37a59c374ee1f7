"""xr node, UDP variant: authenticated JSON controller frames from a bridge (e.g.
a PICO SDK poller) or the replay tool -> ``controllers`` (XrControllers),
``buttons`` (the reports that change a button, connection or page level, and
one a second; operators/xr/level_changes.py) + ``diagnostics``.

The frame format is documented in :mod:`teledora.operators.xr.xr_feed_format`,
the envelope (a pairing hello, then a MAC with the pairing token over this
run's random nonce and each numbered datagram, so nothing captured before a
restart is taken after it) in :mod:`teledora.operators.xr.udp_envelope`, both
in docs/xr.md. The socket binds
127.0.0.1 by default; binding any other address needs ``--allow-remote``. One
sender session controls at a time; another is refused while the first has sent
within ``--takeover-s``. The socket is the device
:class:`teledora.devices.xr.udp_feed.UdpFeedBackend`.

Args/env: ``--bind`` (XR_UDP_BIND, 127.0.0.1), ``--port`` (XR_UDP_PORT, 9870),
``--token`` (XR_UDP_TOKEN; default: random per run, printed), ``--allow-remote``,
``--takeover-s`` (1.0).
"""

from __future__ import annotations

import argparse
import os
import secrets
from typing import Any, Sequence

from teledora.operators.errors import ConfigError
from teledora.devices.xr.feed_device import FeedDevice
from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES
from teledora.operators.xr.feed_step import FeedStep, PageImage
from teledora.devices.xr.udp_feed import DEFAULT_PORT, UdpFeedBackend
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.xr.feed_assembler import FeedAssembler


READ_TIMEOUT_S = 0.005  # how long a read waits for frames before dora's events are serviced

class RemoteBindRefused(ConfigError):
    """Binding a non-loopback address without ``--allow-remote``."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="xr_udp", description=__doc__.splitlines()[0])
    ap.add_argument("--bind", default=os.environ.get("XR_UDP_BIND", "127.0.0.1"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("XR_UDP_PORT", DEFAULT_PORT)))
    ap.add_argument("--token", default=os.environ.get("XR_UDP_TOKEN") or None,
                    help="pairing token the senders' MACs are keyed with (default: random per run, printed)")
    ap.add_argument("--allow-remote", action="store_true", help="allow binding a non-loopback address")
    ap.add_argument("--takeover-s", type=float, default=1.0,
                    help="silence after which another sender session may take control")
    return ap.parse_args(argv)


def run(io: NodeIO, backend: FeedDevice, assembler: FeedAssembler) -> None:
    """The event loop, until dora sends STOP (``backend`` connected already):
    each frame's reports go out at once, the display inputs go to the page
    between reads (of a burst of camera images only the newest); the
    decisions are :class:`~teledora.operators.xr.feed_step.FeedStep`'s."""
    feed = FeedStep(assembler, io.diag)
    try:
        while True:
            for rx in backend.read(READ_TIMEOUT_S):
                io.diag.received += 1
                for report in feed.receive(rx):
                    if io.send("controllers", "XrControllers", report.message) and feed.sent(report):
                        io.send("buttons", "XrControllers", report.message)
            batch = io.next_batch(timeout_s=0)
            stop = batch is None
            for event in io.newest(batch or [], set(CAMERA_NAMES)):
                if event.get("type") == "STOP":
                    stop = True
                    break
                if event.get("type") == "INPUT":
                    shown = feed.display(event["id"], event["value"], event.get("metadata") or {}, io.now())
                    if isinstance(shown, PageImage):
                        backend.offer_image(shown.camera, shown.image, shown.capture_ns)
                    elif shown is not None:
                        backend.write(shown)
            if stop:
                return
            _publish_diagnostics(io, backend, feed)
    finally:
        _publish_diagnostics(io, backend, feed, force=True)
        backend.close()


def _publish_diagnostics(io: NodeIO, backend: FeedDevice, feed: FeedStep, force: bool = False) -> None:
    feed.tally.absorb_device(backend.rejections())
    for level, text in feed.take_logs():
        io.log(level, text)
    if force or io.diag.due(io.now()):
        io.diag.details.update(backend.diagnostics_details(), **feed.details())
        feed.tally.settle()
        io.publish_diagnostics(force=True)


def main(argv: Sequence[str] | None = None, node: Any = None, backend: UdpFeedBackend | None = None) -> None:
    args = parse_args(argv)
    io = NodeIO(make_node(node), node_id("xr"), ends_with=())  # a feed runs until STOP
    if backend is None:
        if not args.bind.startswith("127.") and args.bind != "localhost" and not args.allow_remote:
            raise RemoteBindRefused(f"refusing to bind {args.bind}: pass --allow-remote to accept remote senders")
        token = args.token or secrets.token_urlsafe(12)
        if not args.token:
            print(f"XR UDP feed: pairing token {token} (give it to the sender: --token / XR_UDP_TOKEN)", flush=True)
        backend = UdpFeedBackend(args.bind, args.port, token, args.takeover_s)
    if backend.sock is None:
        backend.connect()
    io.log("info", f"xr_udp listening on {backend.bind}:{backend.port}")
    run(io, backend, FeedAssembler("udp"))


if __name__ == "__main__":
    main()
