"""The WebXR server device, as the xr node builds it: security and plumbing over real
HTTPS/WSS on 127.0.0.1 (no browser), and the self-signed certificate."""

from __future__ import annotations

import asyncio
import json
import ssl
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509

from teledora.nodes.xr import xr_webxr
from teledora.devices.xr.webxr_certificate import ensure_certificate
from teledora.operators.xr.xr_feed_format import parse_frame


@pytest.fixture()
def server(tmp_path: Path):
    args = xr_webxr.parse_args(["--host", "127.0.0.1", "--port", "0", "--cert-dir", str(tmp_path), "--token", "tok"])
    srv = xr_webxr.build_server(args)
    srv.connect()
    yield srv
    srv.close()


def frame(seq: int) -> str:
    hand = {"connected": True, "pose_valid": True, "position": [0.0, 1.2, -0.3], "orientation": [0, 0, 0, 1]}
    return json.dumps({"version": 1, "session": "p", "seq": seq, "sent_ns": 1, "frame": "webxr",
                       "hands": {"left": hand, "right": {"connected": False}}})


async def _session(port: int, script):
    async with aiohttp.ClientSession() as http:
        return await script(http, f"https://127.0.0.1:{port}")


def run(server, script):
    return asyncio.run(_session(server.port, script))


def test_page_is_served_over_tls_and_emulator_only_when_enabled(server):
    async def script(http, base):
        async with http.get(f"{base}/", ssl=False) as r:
            page = await r.text()
        async with http.get(f"{base}/static/app.js", ssl=False) as r:
            js_status = r.status
        async with http.get(f"{base}/iwer.module.js", ssl=False) as r:
            return page, js_status, r.status

    page, js_status, emulator_status = run(server, script)
    assert "E-STOP" in page and js_status == 200 and emulator_status == 404


def test_pairing_token_and_single_controlling_client(server):
    async def script(http, base):
        bad = await http.ws_connect(f"{base}/ws", ssl=False)
        await bad.send_str(json.dumps({"type": "hello", "token": "nope"}))
        bad_reply = (await bad.receive()).json()
        await bad.receive()
        first = await http.ws_connect(f"{base}/ws", ssl=False)
        await first.send_str(json.dumps({"type": "hello", "token": "tok"}))
        welcome = (await first.receive()).json()
        second = await http.ws_connect(f"{base}/ws", ssl=False)
        await second.send_str(json.dumps({"type": "hello", "token": "tok"}))
        busy = (await second.receive()).json()
        await second.receive()
        await first.send_str(frame(1))
        await first.send_str("x" * 5000)  # oversized: dropped and counted, session survives
        await first.send_bytes(b"\x00\x01")
        await first.send_str(frame(2))
        await first.close()
        return bad_reply, bad.close_code, welcome, busy, second.close_code

    bad_reply, bad_code, welcome, busy, busy_code = run(server, script)
    assert bad_reply["type"] == "refused" and "pairing token" in bad_reply["reason"] and bad_code == 4003
    assert welcome["type"] == "welcome"
    assert busy["type"] == "refused" and "in control" in busy["reason"] and busy_code == 4009
    frames = []
    for _ in range(50):
        frames += server.read(0.05)
        if len(frames) >= 3:
            break
    parsed = [parse_frame(f.data) for f in frames]
    assert [p.seq for p in parsed] == [1, 2, 3]
    assert not parsed[-1].hands["left"].connected  # the server reports the hands gone on disconnect
    assert server.stats == {"clients_accepted": 1, "refused_busy": 1, "refused_token": 1, "oversized": 1, "binary": 1,
                            "unpaired_frames": 0}


def test_frames_before_hello_are_refused(server):
    async def script(http, base):
        ws = await http.ws_connect(f"{base}/ws", ssl=False)
        await ws.send_str(frame(1))
        reply = (await ws.receive()).json()
        await ws.receive()
        return reply, ws.close_code

    reply, code = run(server, script)
    assert reply["type"] == "refused" and code == 4002
    assert server.read(0.05) == []


def test_state_is_forwarded_to_the_controlling_page(server):
    async def script(http, base):
        ws = await http.ws_connect(f"{base}/ws", ssl=False)
        await ws.send_str(json.dumps({"type": "hello", "token": "tok"}))
        await ws.receive()
        server.write({"type": "state", "estop_latched": True})
        msg = (await ws.receive(timeout=5)).json()
        await ws.close()
        return msg

    assert run(server, script) == {"type": "state", "estop_latched": True}


def test_certificate_covers_addresses_and_is_reused(tmp_path: Path):
    first = ensure_certificate(tmp_path, ["127.0.0.1", "192.0.2.7"], ["localhost", "robot.local"])
    cert = x509.load_pem_x509_certificate(first.cert.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert {str(a) for a in san.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "192.0.2.7"}
    assert set(san.get_values_for_type(x509.DNSName)) == {"localhost", "robot.local"}
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert x509.oid.ExtendedKeyUsageOID.SERVER_AUTH in list(eku)
    assert (cert.not_valid_after_utc - cert.not_valid_before_utc).days >= 825
    assert first.created
    again = ensure_certificate(tmp_path, ["127.0.0.1"], ["robot.local"])
    assert not again.created and again.cert.read_bytes() == first.cert.read_bytes()
    moved = ensure_certificate(tmp_path, ["127.0.0.1", "198.51.100.4"], ["robot.local"])
    assert moved.created  # a new address is not covered: regenerate
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(moved.cert, moved.key)  # key and certificate match
