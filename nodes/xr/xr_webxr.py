"""xr node, WebXR variant: serves the headset page and its WebSocket from one HTTPS
origin and publishes ``controllers`` (XrControllers) + ``diagnostics``.

The page (nodes/xr/web/) enters ``immersive-vr``, reads both controllers' target-ray
poses in ``local-floor`` and their xr-standard gamepads every XR frame, and sends
feed frames (docs/xr.md) in the WebXR frame; this node converts them to FLU.

The server is the device :class:`teledora.devices.xr.webxr_server.WebXrServer`.
Security: a per-run pairing token (printed with the URL) must open each
WebSocket session; only one client controls at a time (a second one is refused
with the reason); malformed and oversized frames are dropped and counted.
Optional input ``state`` (TeleopState) is forwarded to the page for display.

Args/env: ``--host`` (XR_WEBXR_HOST, 0.0.0.0), ``--port`` (XR_WEBXR_PORT, 8443),
``--cert-dir`` (XR_WEBXR_CERT_DIR, ~/.local/share/teledora/webxr), ``--token``
(XR_WEBXR_TOKEN, random per run), ``--emulator-js`` (serve an IWER build at
/iwer.module.js for tests and desktop trials; the page loads it with ?emulate=1).
"""

from __future__ import annotations

import argparse
import os
import secrets
import ssl
from pathlib import Path
from typing import Any, Sequence

from teledora.devices.xr.feed_loop import run_feed
from teledora.devices.xr.webxr_certificate import ensure_certificate, host_addresses, host_names
from teledora.devices.xr.webxr_server import WebXrServer
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.xr.xr_feed_format import FeedAssembler

WEB_DIR = Path(__file__).resolve().parent / "web"
DEFAULT_PORT = 8443


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="xr_webxr", description=__doc__.splitlines()[0])
    ap.add_argument("--host", default=os.environ.get("XR_WEBXR_HOST", "0.0.0.0"))
    ap.add_argument("--port", type=int, default=int(os.environ.get("XR_WEBXR_PORT", DEFAULT_PORT)))
    ap.add_argument("--cert-dir", type=Path,
                    default=Path(os.environ.get("XR_WEBXR_CERT_DIR", Path.home() / ".local/share/teledora/webxr")))
    ap.add_argument("--token", default=os.environ.get("XR_WEBXR_TOKEN") or secrets.token_urlsafe(9))
    ap.add_argument("--emulator-js", type=Path, default=os.environ.get("XR_WEBXR_EMULATOR_JS") or None)
    ap.add_argument("--plain-http", action="store_true", help="no TLS (only for localhost / adb reverse)")
    return ap.parse_args(argv)


def build_server(args: argparse.Namespace) -> WebXrServer:
    ctx = None
    if not args.plain_http:
        paths = ensure_certificate(args.cert_dir)
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(paths.cert, paths.key)
    return WebXrServer(args.host, args.port, args.token, ctx, WEB_DIR, args.emulator_js)


def urls(server: WebXrServer) -> list[str]:
    scheme = "http" if server.ssl_context is None else "https"
    hosts = [server.host] if server.host not in ("0.0.0.0", "") else host_addresses() + [n for n in host_names() if n.endswith(".local")]
    return [f"{scheme}://{h}:{server.port}/?token={server.token}" for h in hosts]


def main(argv: Sequence[str] | None = None, node: Any = None, server: WebXrServer | None = None) -> None:
    args = parse_args(argv)
    server = server or build_server(args)
    io = NodeIO(make_node(node), node_id("xr"), ends_with=())  # a feed runs until STOP
    server.connect()
    for url in urls(server):
        print(f"WebXR teleop page: open {url} on the headset", flush=True)
        io.log("info", f"WebXR teleop page: {url}")

    run_feed(io, server, FeedAssembler("webxr"), refresh=lambda: io.diag.details.update(server.stats))


if __name__ == "__main__":
    main()
