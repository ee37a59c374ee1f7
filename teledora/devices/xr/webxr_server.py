"""XR feed from the headset page: HTTPS and its WebSocket on one origin (aiohttp).

Security: a per-run pairing token must open each WebSocket session; only one
client controls at a time (a second one is refused with the reason);
malformed and oversized frames are dropped and counted. When the controlling
page disconnects, a frame saying that both hands are gone is read, so the
arms hold and the buttons release.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import queue
import ssl
import threading
import time
from pathlib import Path
from typing import Any, Callable

from aiohttp import WSMsgType, web

from teledora.devices.xr.feed_device import FeedDevice, ReceivedFrame
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES

_WS_HARD_LIMIT = 64 * 1024  # beyond this aiohttp closes the socket; below it we drop and count
_CLOSE_BAD_TOKEN, _CLOSE_BUSY, _CLOSE_PROTOCOL = 4003, 4009, 4002


class WebXrServer(FeedDevice):
    """HTTPS + WebSocket feed device (aiohttp in its own thread).

    Args:
        host: Bind address.
        port: TCP port (0 picks a free one; see ``port`` after ``connect``).
        token: Pairing token a client must present in its hello.
        ssl_context: TLS context (None serves plain HTTP, for localhost/adb reverse only).
        web_dir: The headset page (``index.html`` and its static files).
        emulator_js: Optional IWER module served at /iwer.module.js.
        clock: Host clock (ns).
    """

    def __init__(self, host: str, port: int, token: str, ssl_context: ssl.SSLContext | None, web_dir: Path,
                 emulator_js: Path | None = None, clock: Callable[[], int] = time.time_ns) -> None:
        self.host, self.port, self.token, self.ssl_context = host, port, token, ssl_context
        self.web_dir, self.emulator_js, self.clock = web_dir, emulator_js, clock
        self.stats = {"clients_accepted": 0, "refused_busy": 0, "refused_token": 0, "oversized": 0, "binary": 0,
                      "unpaired_frames": 0}
        self._frames: queue.Queue[ReceivedFrame] = queue.Queue()
        self._owner: web.WebSocketResponse | None = None
        self._owner_peer = ""
        self._client = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------- device API
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

    def read(self, timeout_s: float = 0.0) -> list[ReceivedFrame]:
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
        app.router.add_static("/static/", self.web_dir, show_index=False)
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
        return web.FileResponse(self.web_dir / "index.html", headers={"Cache-Control": "no-store"})

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
