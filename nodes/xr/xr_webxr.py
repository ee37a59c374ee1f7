"""xr node, WebXR variant: serves the headset page and its WebSocket from one HTTPS
origin and publishes ``controllers`` (XrControllers) + ``diagnostics``.

The page (nodes/web/) enters ``immersive-vr``, reads both controllers' target-ray
poses in ``local-floor`` and their xr-standard gamepads every XR frame, and sends
feed frames (docs/xr.md) in the WebXR frame; this node converts them to FLU.

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
import asyncio
import hmac
import json
import os
import queue
import secrets
import ssl
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from aiohttp import WSMsgType, web

from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.devices.xr.webxr_certificate import ensure_certificate, host_addresses, host_names
from teledora.devices.xr.feed_loop import ReceivedFrame, run_feed
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES, FeedAssembler

WEB_DIR = Path(__file__).resolve().parent / "web"
DEFAULT_PORT = 8443
_WS_HARD_LIMIT = 64 * 1024  # beyond this aiohttp closes the socket; below it we drop and count
_CLOSE_BAD_TOKEN, _CLOSE_BUSY, _CLOSE_PROTOCOL = 4003, 4009, 4002


class WebXrServer:
    """HTTPS + WebSocket backend (aiohttp in its own thread).

    Args:
        host: Bind address.
        port: TCP port (0 picks a free one; see ``port`` after ``connect``).
        token: Pairing token a client must present in its hello.
        ssl_context: TLS context (None serves plain HTTP, for localhost/adb reverse only).
        emulator_js: Optional IWER module served at /iwer.module.js.
        clock: Host clock (ns).
    """

    def __init__(self, host: str, port: int, token: str, ssl_context: ssl.SSLContext | None,
                 emulator_js: Path | None = None, clock: Callable[[], int] = time.time_ns) -> None:
        self.host, self.port, self.token, self.ssl_context = host, port, token, ssl_context
        self.emulator_js, self.clock = emulator_js, clock
        self.stats = {"clients_accepted": 0, "refused_busy": 0, "refused_token": 0, "oversized": 0, "binary": 0,
                      "unpaired_frames": 0}
        self._frames: queue.Queue[ReceivedFrame] = queue.Queue()
        self._owner: web.WebSocketResponse | None = None
        self._owner_peer = ""
        self._client = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ backend API
    def connect(self) -> None:
        started = threading.Event()
        errors: list[BaseException] = []

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(self._start())
            except BaseException as exc:  # reported to the caller below
                errors.append(exc)
                started.set()
                return
            started.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=serve, name="webxr-server", daemon=True)
        self._thread.start()
        started.wait(30)
        if errors:
            raise errors[0]

    def read(self, timeout_s: float) -> list[ReceivedFrame]:
        try:
            frames = [self._frames.get(timeout=timeout_s)]
        except queue.Empty:
            return []
        while True:
            try:
                frames.append(self._frames.get_nowait())
            except queue.Empty:
                return frames

    def write(self, message: dict[str, Any]) -> None:
        """Sends a JSON message to the controlling page (dropped if none)."""
        ws, loop = self._owner, self._loop
        if ws is None or loop is None or ws.closed:
            return
        text = json.dumps(message, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))
        asyncio.run_coroutine_threadsafe(self._send_quietly(ws, text), loop)

    def close(self) -> None:
        if self._loop is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self._stop(), self._loop)
        try:
            fut.result(10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(10)
            self._loop = None

    # -------------------------------------------------------------- aiohttp
    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/", self._index)
        app.router.add_get("/ws", self._ws)
        app.router.add_get("/iwer.module.js", self._emulator)
        app.router.add_static("/static/", WEB_DIR, show_index=False)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=self.ssl_context)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def _stop(self) -> None:
        if self._owner is not None:
            await self._owner.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _index(self, request: web.Request) -> web.StreamResponse:
        return web.FileResponse(WEB_DIR / "index.html", headers={"Cache-Control": "no-store"})

    async def _emulator(self, request: web.Request) -> web.StreamResponse:
        if self.emulator_js is None:
            raise web.HTTPNotFound(text="emulator not enabled (start the node with --emulator-js)")
        return web.FileResponse(self.emulator_js, headers={"Content-Type": "text/javascript"})

    @staticmethod
    async def _send_quietly(ws: web.WebSocketResponse, text: str) -> None:
        try:
            await ws.send_str(text)
        except (ConnectionError, RuntimeError):
            pass

    async def _ws(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(max_msg_size=_WS_HARD_LIMIT, heartbeat=5.0)
        await ws.prepare(request)
        peer = f"{request.remote}"
        paired = False
        last_seq = -1
        session = ""
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY:
                    self.stats["binary"] += 1
                    continue
                if msg.type != WSMsgType.TEXT:
                    continue
                if not paired:
                    paired = await self._hello(ws, msg.data, peer)
                    if not paired:
                        return ws
                    continue
                if len(msg.data) > MAX_FRAME_BYTES:
                    self.stats["oversized"] += 1
                    continue
                last_seq, session = self._peek_seq(msg.data, last_seq, session)
                self._frames.put(ReceivedFrame(msg.data.encode(), peer, self._client, self.clock()))
        finally:
            if paired and self._owner is ws:
                self._owner = None
                # tell the assembler both hands are gone: arms hold, buttons release
                self._frames.put(ReceivedFrame(_disconnect_frame(session, last_seq + 1, self.clock()), peer,
                                               self._client, self.clock()))
        return ws

    @staticmethod
    def _peek_seq(data: str, last_seq: int, session: str) -> tuple[int, str]:
        try:
            d = json.loads(data)
            return int(d.get("seq", last_seq)), str(d.get("session", session))
        except (ValueError, TypeError, AttributeError):
            return last_seq, session

    async def _hello(self, ws: web.WebSocketResponse, data: str, peer: str) -> bool:
        try:
            hello = json.loads(data)
            token = str(hello["token"]) if hello.get("type") == "hello" else None
        except (ValueError, TypeError, KeyError, AttributeError):
            token = None
        if token is None:
            self.stats["unpaired_frames"] += 1
            await ws.send_json({"type": "refused", "reason": "the first message must be a hello with the pairing token"})
            await ws.close(code=_CLOSE_PROTOCOL)
            return False
        if not hmac.compare_digest(token.encode(), self.token.encode()):
            self.stats["refused_token"] += 1
            await ws.send_json({"type": "refused", "reason": "wrong pairing token: use the URL printed by the xr node"})
            await ws.close(code=_CLOSE_BAD_TOKEN)
            return False
        if self._owner is not None and not self._owner.closed:
            self.stats["refused_busy"] += 1
            await ws.send_json({"type": "refused", "reason": f"another client ({self._owner_peer}) is in control; "
                                "close it or wait until it disconnects"})
            await ws.close(code=_CLOSE_BUSY)
            return False
        self._owner, self._owner_peer = ws, peer
        self._client += 1
        self.stats["clients_accepted"] += 1
        await ws.send_json({"type": "welcome", "client": self._client, "max_frame_bytes": MAX_FRAME_BYTES})
        return True


def _disconnect_frame(session: str, seq: int, now_ns: int) -> bytes:
    gone = {"connected": False}
    return json.dumps({"version": 1, "session": session, "seq": max(seq, 0), "sent_ns": now_ns, "frame": "webxr",
                       "focused": False, "hands": {"left": gone, "right": gone}}).encode()


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
    return WebXrServer(args.host, args.port, args.token, ctx, args.emulator_js)


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
