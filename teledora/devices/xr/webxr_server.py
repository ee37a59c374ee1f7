"""XR feed from the headset page: HTTPS and its WebSocket on one origin (aiohttp).

Access:

* **Origin**: a WebSocket upgrade must come from a page of this server's own
  origin (``https://<one of this host's addresses or names>:<port>``, or one
  given with ``allowed_origins``); any other, or none, is refused with 403
  before the socket opens, so a page elsewhere cannot use the operator's
  browser to reach the robot.
* **Pairing**: the first message must be a hello with the run's token
  (compared in constant time), within ``hello_timeout_s`` of opening; else
  the socket is told why and closed.
* **One controlling client**: while one page is paired, another is refused.

After pairing the server pings the page every ``ping_period_s``; the pongs
map the page's clock onto the host's (:mod:`teledora.operators.xr.headset_clock`),
and each frame is handed on with the estimate current when it arrived. When
the controlling page goes, a disconnect is read (the loop publishes both hands
gone), whatever the page sent before.

Camera panels: :meth:`WebXrServer.offer_image` keeps each camera's newest
image; the paired page is sent, for each camera it shows (its ``view``
message), the newest image as a JPEG once it has reported the previous one
drawn (``shown``), so frames never queue (:mod:`teledora.operators.xr.camera_view`).
A camera's own JPEG (:class:`~teledora.operators.xr.camera_view.JpegFrame`) goes
out byte for byte; raw RGB pixels are encoded here.
The ``shown`` reports, mapped to the host clock, give capture-to-display latency.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import queue
import ssl
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Iterable
from urllib.parse import urlsplit

from aiohttp import WSCloseCode, WSMsgType, web

from teledora.devices.xr.feed_device import FeedDevice, ReceivedFrame
from teledora.operators.xr.feed_rejection import FeedFormatError
from teledora.operators.xr.headset_clock import ClockEstimate, HeadsetClock
from teledora.operators.xr.camera_view import CameraGate, JpegFrame, LatencyStats, frame_message
from teledora.operators.xr.page_messages import Shown, ViewChoice, parse_control, parse_hello
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES

_WS_HARD_LIMIT = 64 * 1024  # beyond this aiohttp closes the socket; below it we drop and count
_CLOSE_BAD_TOKEN, _CLOSE_BUSY, _CLOSE_PROTOCOL = 4003, 4009, 4002
HELLO_TIMEOUT_S = 5.0
PING_PERIOD_S = 0.5
_OUTSTANDING_PINGS = 8
JPEG_QUALITY = 80
_CAMERA_POLL_S = 0.25  # a camera whose ack is overdue is looked at again this often


class WebXrServer(FeedDevice):
    """HTTPS + WebSocket feed device (aiohttp in its own thread).

    Args:
        host: Bind address.
        port: TCP port (0 picks a free one; see ``port`` after ``connect``).
        token: Pairing token a client must present in its hello.
        ssl_context: TLS context (None serves plain HTTP, for loopback/adb reverse only).
        web_dir: The headset page (``index.html`` and its static files).
        emulator_js: Optional IWER module served at /iwer.module.js.
        clock: Host clock (ns).
        allowed_hosts: Host names and addresses the page may be loaded from
            (its origin is ``<scheme>://<host>:<port>``); ``localhost``,
            ``127.0.0.1`` and a specific bind address are always in.
        allowed_origins: Further origins accepted as they are (e.g. a port
            forwarded with ``adb reverse`` to another port).
        hello_timeout_s: An open socket without a hello after this long is closed.
        ping_period_s: Clock pings to the paired page.
    """

    def __init__(self, host: str, port: int, token: str, ssl_context: ssl.SSLContext | None, web_dir: Path,
                 emulator_js: Path | None = None, clock: Callable[[], int] = time.time_ns,
                 allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = (),
                 hello_timeout_s: float = HELLO_TIMEOUT_S, ping_period_s: float = PING_PERIOD_S) -> None:
        super().__init__()
        self.host, self.port, self.token, self.ssl_context = host, port, token, ssl_context
        self.web_dir, self.emulator_js, self.clock = web_dir, emulator_js, clock
        self.certificate_fingerprint: str | None = None  # SHA-256 of the TLS certificate, printed for the operator
        self.allowed_hosts = {h.lower() for h in allowed_hosts} | {"localhost", "127.0.0.1"}
        if host not in ("", "0.0.0.0"):
            self.allowed_hosts.add(host.lower())
        self._extra_origins = set()
        for origin in allowed_origins:
            u = urlsplit(origin)
            self._extra_origins.add((u.scheme, (u.hostname or "").lower(),
                                     u.port if u.port is not None else {"http": 80, "https": 443}.get(u.scheme)))
        self.hello_timeout_s, self.ping_period_s = float(hello_timeout_s), float(ping_period_s)
        self.clients_accepted = 0
        self._estimate: ClockEstimate | None = None  # the paired page's latest clock estimate, for diagnostics
        self._round_trips = 0
        self._frames: queue.Queue[ReceivedFrame] = queue.Queue()
        self._owner: web.WebSocketResponse | None = None
        self._owner_peer = ""
        self._client = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.jpeg_quality = JPEG_QUALITY
        self._camera_lock = threading.Lock()
        self._camera_latest: dict[str, tuple[int, int, Any]] = {}  # camera -> (seq, capture_ns, JpegFrame or RGB)
        self._camera_arrived: dict[str, tuple[int, int]] = {}  # camera -> (seq, host ns it reached the server)
        self._camera_wake: asyncio.Event | None = None
        self.camera_stats: dict[str, LatencyStats] = {}
        self._gates: dict[str, CameraGate] = {}

    # ------------------------------------------------------------- device API
    def offer_image(self, camera: str, rgb: Any, capture_ns: int) -> None:
        """The newest image of ``camera``: a :class:`JpegFrame` sent as it is, or H x W x 3 RGB
        pixels (owned by the server from now on); an older one not yet sent is dropped."""
        with self._camera_lock:
            seq = self._camera_latest.get(camera, (0, 0, None))[0] + 1
            self._camera_latest[camera] = (seq, int(capture_ns), rgb)
            self._camera_arrived[camera] = (seq, self.clock())
        loop, wake = self._loop, self._camera_wake
        if loop is not None and wake is not None:
            try:
                loop.call_soon_threadsafe(wake.set)
            except RuntimeError:  # the loop is closing
                pass

    def camera_summary(self) -> dict[str, dict[str, Any]]:
        """Per camera: frames sent, shown, skipped, and latency/rate figures."""
        out = {}
        for cam, gate in dict(self._gates).items():
            stats = self.camera_stats.get(cam, LatencyStats()).summary()
            out[cam] = {"sent": gate.sent, "shown": gate.shown, "skipped": gate.skipped, **stats}
        return out

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

    def diagnostics_details(self) -> dict[str, Any]:
        est = self._estimate
        return {"clients_accepted": self.clients_accepted, "peer": self._owner_peer if self._owner is not None else "",
                "clock_offset_ns": None if est is None else est.offset_ns,
                "clock_uncertainty_ns": None if est is None else est.uncertainty_at(self.clock()),
                "round_trips": self._round_trips, "camera_view": self.camera_summary()}

    def origin_allowed(self, origin: str | None) -> bool:
        """True for this server's own origin (scheme, one of its hosts, its port)
        or one of ``allowed_origins``."""
        if not origin:
            return False
        try:
            u = urlsplit(origin.strip())
            port = u.port
        except ValueError:
            return False
        scheme = "http" if self.ssl_context is None else "https"
        port = port if port is not None else {"http": 80, "https": 443}.get(u.scheme)
        key = (u.scheme, (u.hostname or "").lower(), port)
        own = key[0] == scheme and key[2] == self.port and key[1] in self.allowed_hosts
        return own or key in self._extra_origins

    # -------------------------------------------------------------- aiohttp
    async def _start(self) -> None:
        self._camera_wake = asyncio.Event()
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

    async def _refuse(self, ws: web.WebSocketResponse, why: str, reason: str, code: int) -> None:
        """Counts the refusal as ``why``, tells the page (the code it shows a reason for, and the text), closes."""
        self.reject(why)
        await self._send_quietly(ws, json.dumps({"type": "refused", "code": why, "reason": reason}))
        await ws.close(code=code)

    async def _ws(self, request: web.Request) -> web.StreamResponse:
        if not self.origin_allowed(request.headers.get("Origin")):
            self.reject("bad_origin")
            raise web.HTTPForbidden(text="this page's origin may not open the teleop socket")
        ws = web.WebSocketResponse(max_msg_size=_WS_HARD_LIMIT, heartbeat=5.0)
        await ws.prepare(request)
        peer = f"{request.remote}"
        try:
            first = await asyncio.wait_for(ws.receive(), self.hello_timeout_s)
        except asyncio.TimeoutError:
            await self._refuse(ws, "hello_timeout", f"no hello within {self.hello_timeout_s:g} s", _CLOSE_PROTOCOL)
            return ws
        if first.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR):
            return ws
        if not await self._hello(ws, first, peer):
            return ws
        client, clock = self._client, HeadsetClock()
        self._estimate, self._round_trips = None, 0  # the clock is this socket's (used in the server thread only)
        pings: OrderedDict[int, int] = OrderedDict()
        pinger = asyncio.create_task(self._pinger(ws, pings))
        view: set[str] = set()
        in_flight: dict[str, tuple[int, int, int]] = {}  # camera -> (capture, arrival, send) ns of the frame in flight
        self._gates = {}
        sender = asyncio.create_task(self._camera_sender(ws, view, in_flight))
        try:
            async for msg in ws:
                if msg.type == WSMsgType.BINARY:
                    self.reject("binary")
                    continue
                if msg.type == WSMsgType.ERROR:
                    if getattr(msg.data, "code", None) == WSCloseCode.MESSAGE_TOO_BIG:
                        self.reject("oversize")  # over the hard limit: aiohttp closes the socket
                    break
                if msg.type != WSMsgType.TEXT:
                    continue
                recv_ns = self.clock()
                if len(msg.data) > MAX_FRAME_BYTES:
                    self.reject("oversize")
                    continue
                try:
                    pong = parse_control(msg.data)
                except FeedFormatError as exc:
                    self.reject(exc.reason)
                    continue
                if isinstance(pong, Shown):
                    self._camera_shown(pong, clock.estimate(recv_ns), in_flight)
                    continue
                if isinstance(pong, ViewChoice):
                    view.clear()
                    view.update(pong.cameras)
                    if self._camera_wake is not None:
                        self._camera_wake.set()
                    continue
                if pong is not None:
                    sent_ns = pings.pop(pong.ping_id, None)
                    if sent_ns is None or not clock.add_round_trip(sent_ns, pong.page_ns, recv_ns):
                        self.reject("bad_control")
                    else:
                        self._estimate, self._round_trips = clock.estimate(recv_ns), clock.round_trips
                    continue
                estimate = clock.estimate(recv_ns)
                self._estimate = estimate
                self._frames.put(ReceivedFrame(msg.data.encode("utf-8", "replace"), peer, client, recv_ns, estimate))
        finally:
            pinger.cancel()
            sender.cancel()
            if self._owner is ws:
                self._owner = None
                # whatever the page sent before, the loop reports both hands gone: arms hold, buttons release
                self._frames.put(ReceivedFrame(b"", peer, client, self.clock(), disconnect=True))
        return ws

    def _camera_shown(self, shown: Shown, estimate: ClockEstimate | None,
                      in_flight: dict[str, tuple[int, int, int]]) -> None:
        gate = self._gates.get(shown.camera)
        if gate is None or not gate.mark_shown(shown.seq):
            return  # late (its ack timed out) or unknown: nothing to learn from it
        times = in_flight.pop(shown.camera, None)
        if estimate is not None and times is not None:
            capture_ns, arrived_ns, sent_ns = times
            self.camera_stats.setdefault(shown.camera, LatencyStats()).add(
                capture_ns, shown.page_ns + estimate.offset_ns, arrived_ns, sent_ns)
        if self._camera_wake is not None:
            self._camera_wake.set()

    async def _camera_sender(self, ws: web.WebSocketResponse, view: set[str],
                             in_flight: dict[str, tuple[int, int, int]]) -> None:
        """Sends each shown camera's newest frame once the page has drawn the one before."""
        import cv2

        loop = asyncio.get_running_loop()
        wake = self._camera_wake
        assert wake is not None
        while not ws.closed:
            try:
                await asyncio.wait_for(wake.wait(), _CAMERA_POLL_S)
            except asyncio.TimeoutError:
                pass
            wake.clear()
            with self._camera_lock:
                latest = {c: self._camera_latest[c] for c in view if c in self._camera_latest}
                arrived = dict(self._camera_arrived)
            for cam, (seq, capture_ns, image) in latest.items():
                gate = self._gates.setdefault(cam, CameraGate())
                gate.offer(seq)
                if not gate.ready(self.clock()):
                    continue
                if isinstance(image, JpegFrame):  # the camera's own JPEG: nothing to encode
                    payload, w, h = image.data, image.width, image.height
                else:
                    ok, jpeg = await loop.run_in_executor(None, lambda img=image: cv2.imencode(
                        ".jpg", img[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, self.jpeg_quality]))
                    if not ok:
                        continue
                    payload = jpeg.tobytes()
                    h, w = image.shape[:2]
                if ws.closed:
                    continue
                sent_ns = self.clock()
                gate.mark_sent(seq, sent_ns)
                got = arrived.get(cam, (seq, sent_ns))
                in_flight[cam] = (capture_ns, got[1] if got[0] == seq else sent_ns, sent_ns)
                try:
                    await ws.send_bytes(frame_message(cam, seq, capture_ns, w, h, payload))
                except (ConnectionError, RuntimeError):
                    return

    async def _pinger(self, ws: web.WebSocketResponse, pings: "OrderedDict[int, int]") -> None:
        ping_id = 0
        while not ws.closed:
            ping_id += 1
            pings[ping_id] = self.clock()
            while len(pings) > _OUTSTANDING_PINGS:
                pings.popitem(last=False)
            await self._send_quietly(ws, json.dumps({"type": "ping", "id": ping_id}))
            await asyncio.sleep(self.ping_period_s)

    async def _hello(self, ws: web.WebSocketResponse, msg: Any, peer: str) -> bool:
        try:
            if msg.type != WSMsgType.TEXT:
                raise FeedFormatError("bad_hello", "the hello is a text message")
            hello = parse_hello(msg.data)
        except FeedFormatError:
            await self._refuse(ws, "bad_hello", "the first message must be a hello with the pairing token", _CLOSE_PROTOCOL)
            return False
        if not hmac.compare_digest(hello.token.encode(), self.token.encode()):
            said = "pairing token wrong" if hello.token else "pairing token missing"
            await self._refuse(ws, "bad_token", f"{said}: open the address the xr node printed", _CLOSE_BAD_TOKEN)
            return False
        if self._owner is not None and not self._owner.closed:
            await self._refuse(ws, "busy", f"another client ({self._owner_peer}) is in control; close it or wait until it "
                               "disconnects", _CLOSE_BUSY)
            return False
        self._owner, self._owner_peer = ws, peer
        self._client += 1
        self.clients_accepted += 1
        await ws.send_json({"type": "welcome", "client": self._client, "max_frame_bytes": MAX_FRAME_BYTES})
        return True
