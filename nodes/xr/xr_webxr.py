"""xr node, WebXR variant: serves the headset page and its WebSocket from one HTTPS
origin and publishes ``controllers`` (XrControllers), ``buttons`` (the reports
that change a button, connection or page level, and one a second;
operators/xr/level_changes.py) + ``diagnostics``.

The page (nodes/xr/web/) enters ``immersive-vr``, reads both controllers' target-ray
poses in ``local-floor`` and their xr-standard gamepads every XR frame, and sends
feed frames (docs/xr.md) in the WebXR frame; this node converts them to FLU.

The server is the device :class:`teledora.devices.xr.webxr_server.WebXrServer`.
Security: the WebSocket opens only for a page of this server's own origin; a
per-run pairing token (printed with the URL) must come in the first message,
within ``--hello-timeout-s``; only one client controls at a time (a second one
is refused with the reason); refused frames are counted by reason. Plain HTTP
(``--plain-http``) binds the loopback only. Optional input ``state``
(TeleopState) is forwarded to the page for display (its heads-up line, and with
``page_seq`` the acknowledgement of its E-STOP: docs/xr.md, "What the page shows"), and
optional input ``episode`` (EpisodeState) for the episode panel in VR, whose
buttons come back in the feed frames' ``ui`` (docs/xr.md, "In-VR controls: the episode buttons").
Optional inputs ``chest``, ``top_front``, ``top_back``, ``left_wrist``,
``right_wrist`` (camera images) feed the camera panels in VR: the newest image
of each camera the page shows goes to it as a JPEG once it has drawn the
previous one (docs/xr.md, "Camera panels and the heads-up line").

Args/env: ``--host`` (XR_WEBXR_HOST, 0.0.0.0; 127.0.0.1 with --plain-http),
``--port`` (XR_WEBXR_PORT, 8443), ``--cert-dir`` (XR_WEBXR_CERT_DIR,
~/.local/share/teledora/webxr), ``--token`` (XR_WEBXR_TOKEN, random per run),
``--allow-origin`` (repeatable), ``--hello-timeout-s`` (5), ``--emulator-js``
(serve an IWER build at /iwer.module.js for tests and desktop trials; the page
loads it with ?emulate=1).
"""

from __future__ import annotations

import argparse
import os
import secrets
import ssl
import sys
from pathlib import Path
from typing import Any, Sequence

from teledora.devices.xr.feed_device import FeedDevice
from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES
from teledora.operators.xr.feed_step import FeedStep, PageImage
from teledora.operators.errors import ConfigError
from teledora.devices.xr.webxr_certificate import ensure_certificate, fingerprint_sha256, host_addresses, host_names
from teledora.devices.xr.webxr_server import HELLO_TIMEOUT_S, WebXrServer
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.xr.feed_assembler import FeedAssembler
from teledora.operators.xr.pairing_qr import qr_text

WEB_DIR = Path(__file__).resolve().parent / "web"
DEFAULT_PORT = 8443
LOOPBACK = "127.0.0.1"
READ_TIMEOUT_S = 0.005  # how long a read waits for frames before dora's events are serviced


class PlainHttpRefused(ConfigError):
    """``--plain-http`` with a host other than the loopback: the token would cross the network in clear."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="xr_webxr", description=__doc__.splitlines()[0])
    ap.add_argument("--host", default=os.environ.get("XR_WEBXR_HOST") or None,
                    help="bind address (default 0.0.0.0; with --plain-http only 127.0.0.1 is allowed)")
    ap.add_argument("--port", type=int, default=int(os.environ.get("XR_WEBXR_PORT", DEFAULT_PORT)))
    ap.add_argument("--cert-dir", type=Path,
                    default=Path(os.environ.get("XR_WEBXR_CERT_DIR", Path.home() / ".local/share/teledora/webxr")))
    ap.add_argument("--token", default=os.environ.get("XR_WEBXR_TOKEN") or secrets.token_urlsafe(9))
    ap.add_argument("--emulator-js", type=Path, default=os.environ.get("XR_WEBXR_EMULATOR_JS") or None)
    ap.add_argument("--plain-http", action="store_true", help="no TLS: binds 127.0.0.1 only (adb reverse)")
    ap.add_argument("--allow-origin", action="append", default=[],
                    help="a further page origin allowed to open the socket, e.g. http://localhost:9000 (repeatable)")
    ap.add_argument("--hello-timeout-s", type=float, default=HELLO_TIMEOUT_S,
                    help="close a socket that has not sent its hello after this long")
    args = ap.parse_args(argv)
    if args.host is None:
        args.host = LOOPBACK if args.plain_http else "0.0.0.0"
    if args.plain_http and args.host != LOOPBACK:
        raise PlainHttpRefused(f"--plain-http serves the pairing token in clear: it binds {LOOPBACK} only, "
                               f"not {args.host} (use TLS for the network, or adb reverse to the loopback)")
    return args


def build_server(args: argparse.Namespace) -> WebXrServer:
    ctx = fingerprint = None
    if not args.plain_http:
        paths = ensure_certificate(args.cert_dir)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(paths.cert, paths.key)
        fingerprint = fingerprint_sha256(paths.cert)
    server = WebXrServer(args.host, args.port, args.token, ctx, WEB_DIR, args.emulator_js,
                         allowed_hosts=host_addresses() + host_names(), allowed_origins=args.allow_origin,
                         hello_timeout_s=args.hello_timeout_s)
    server.certificate_fingerprint = fingerprint
    return server


def urls(server: WebXrServer) -> list[str]:
    scheme = "http" if server.ssl_context is None else "https"
    hosts = [server.host] if server.host not in ("0.0.0.0", "") else host_addresses() + [n for n in host_names() if n.endswith(".local")]
    return [f"{scheme}://{h}:{server.port}/?token={server.token}" for h in hosts]


def pairing_banner(server: WebXrServer, ansi: bool = False) -> str:
    """What the node prints for a newcomer: every address, the first one as a QR code to
    scan with the headset, and the certificate's fingerprint to check before accepting it."""
    addresses = urls(server)
    lines = [f"WebXR teleop page: open {url} on the headset" for url in addresses]
    lines += ["Or scan this with the headset (it holds the first address):", qr_text(addresses[0], ansi=ansi)]
    if server.certificate_fingerprint:
        lines += ["The browser will warn that the certificate is self-signed: accept it only if its SHA-256",
                  f"fingerprint is {server.certificate_fingerprint}"]
    return "\n".join(lines)


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


def main(argv: Sequence[str] | None = None, node: Any = None, server: WebXrServer | None = None) -> None:
    args = parse_args(argv)
    server = server or build_server(args)
    io = NodeIO(make_node(node), node_id("xr"), ends_with=())  # a feed runs until STOP
    server.connect()
    print(pairing_banner(server, ansi=sys.stdout.isatty()), flush=True)
    for url in urls(server):
        io.log("info", f"WebXR teleop page: {url}")

    run(io, server, FeedAssembler("webxr"))


if __name__ == "__main__":
    main()
