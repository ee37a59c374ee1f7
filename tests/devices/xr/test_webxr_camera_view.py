"""The camera panels' stream over real HTTPS/WSS with a real client (no browser):
only the cameras the page asked for, JPEG of the newest image (a camera's own
JPEG byte for byte, raw pixels encoded), one frame in
flight until the page answers `shown`, and the latency kept from its answers."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from teledora.operators.contract.compressed_image import encode_jpeg
from teledora.operators.xr.camera_view import JpegFrame, split_frame_message
from tests.devices.xr.test_webxr_server import paired, run, make_server


@pytest.fixture()
def server(tmp_path: Path):
    srv = make_server(tmp_path)
    yield srv
    srv.close()


def image(value: int) -> np.ndarray:
    img = np.zeros((48, 64, 3), np.uint8)
    img[:] = (value, 255 - value, 30)
    return img


async def next_binary(ws, timeout_s: float = 3.0):
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        try:
            msg = await ws.receive(timeout=max(0.01, end - time.monotonic()))
        except asyncio.TimeoutError:
            return None
        if msg.type.name == "BINARY":
            return split_frame_message(msg.data)
    return None


def test_newest_frame_only_one_in_flight_and_only_viewed_cameras(server) -> None:
    async def script(http, base):
        ws = await paired(http, base)
        await ws.send_str(json.dumps({"type": "view", "cameras": "top_front"}))
        t0 = time.time_ns()
        server.offer_image("left_wrist", image(9), t0)  # not viewed: never sent
        server.offer_image("top_front", image(10), t0)
        header, jpeg = await next_binary(ws)
        assert header["camera"] == "top_front" and int(header["capture_ns"]) == t0
        rgb = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        assert rgb.shape == (48, 64, 3) and abs(int(rgb[24, 32, 0]) - 10) <= 4
        # three newer frames while the first is unanswered: nothing more is sent
        for v in (20, 30, 40):
            server.offer_image("top_front", image(v), time.time_ns())
        assert await next_binary(ws, 0.6) is None
        await ws.send_str(json.dumps({"type": "shown", "camera": "top_front", "seq": header["seq"],
                                      "page_ns": time.time_ns()}))
        header2, jpeg2 = await next_binary(ws)
        rgb2 = cv2.imdecode(np.frombuffer(jpeg2, np.uint8), cv2.IMREAD_COLOR)[..., ::-1]
        assert header2["seq"] == header["seq"] + 3 and abs(int(rgb2[24, 32, 0]) - 40) <= 4  # the newest, not the next
        await ws.send_str(json.dumps({"type": "shown", "camera": "top_front", "seq": header2["seq"],
                                      "page_ns": time.time_ns()}))
        await asyncio.sleep(0.2)
        await ws.close()

    run(server, script)
    view = server.diagnostics_details()["camera_view"]
    assert set(view) == {"top_front"}
    f = view["top_front"]
    assert f["sent"] == 2 and f["shown"] == 2 and f["skipped"] >= 1
    assert f["median_ms"] is not None and 0 <= f["median_ms"] < 5000


def test_a_stale_or_foreign_shown_changes_nothing(server) -> None:
    async def script(http, base):
        ws = await paired(http, base)
        await ws.send_str(json.dumps({"type": "view", "cameras": "chest"}))
        server.offer_image("chest", image(1), time.time_ns())
        header, _ = await next_binary(ws)
        server.offer_image("chest", image(2), time.time_ns())
        for bad in ({"camera": "chest", "seq": header["seq"] + 5}, {"camera": "top_back", "seq": header["seq"]}):
            await ws.send_str(json.dumps({"type": "shown", "page_ns": time.time_ns(), **bad}))
        assert await next_binary(ws, 0.5) is None  # still waiting for the real answer
        await ws.close()

    run(server, script)
    assert server.diagnostics_details()["camera_view"]["chest"]["shown"] == 0


def test_a_cameras_jpeg_reaches_the_page_byte_for_byte(server) -> None:
    jpeg = encode_jpeg(image(70)).tobytes()

    async def script(http, base):
        ws = await paired(http, base)
        await ws.send_str(json.dumps({"type": "view", "cameras": "chest"}))
        t0 = time.time_ns()
        server.offer_image("chest", JpegFrame(jpeg, 64, 48), t0)
        header, received = await next_binary(ws)
        assert received == jpeg  # not decoded and encoded again
        assert (header["camera"], header["width"], header["height"], int(header["capture_ns"])) == ("chest", 64, 48, t0)
        await ws.send_str(json.dumps({"type": "shown", "camera": "chest", "seq": header["seq"],
                                      "page_ns": time.time_ns()}))
        await asyncio.sleep(0.2)
        await ws.close()

    run(server, script)
    assert server.diagnostics_details()["camera_view"]["chest"]["shown"] == 1
