"""The WebXR server device, as the xr node builds it: access rules and plumbing over
real HTTPS/WSS on 127.0.0.1 with a real client (no browser), and the certificate."""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509

from teledora.devices.xr.webxr_certificate import ensure_certificate
from teledora.nodes.xr import xr_webxr
from teledora.operators.xr.xr_feed_format import parse_frame


def make_server(tmp_path: Path, *extra: str):
    args = xr_webxr.parse_args(["--host", "127.0.0.1", "--port", "0", "--cert-dir", str(tmp_path), "--token", "tok",
                                *extra])
    srv = xr_webxr.build_server(args)
    srv.connect()
    return srv


@pytest.fixture()
def server(tmp_path: Path):
    srv = make_server(tmp_path)
    yield srv
    srv.close()


def frame(seq: int, **kw) -> str:
    hand = {"connected": True, "pose_valid": True, "position": [0.0, 1.2, -0.3], "orientation": [0, 0, 0, 1]}
    d = {"version": 1, "session": "p", "seq": seq, "sent_ns": time.time_ns(), "frame": "webxr",
         "hands": {"left": hand, "right": {"connected": False}}}
    d.update(kw)
    return json.dumps(d)


async def _session(port: int, script):
    async with aiohttp.ClientSession() as http:
        return await script(http, f"https://127.0.0.1:{port}")


def run(server, script):
    return asyncio.run(_session(server.port, script))


def connect(http, base, origin: str | None = "same"):
    headers = {} if origin is None else {"Origin": base if origin == "same" else origin}
    return http.ws_connect(f"{base}/ws", ssl=False, headers=headers)


async def paired(http, base, answer_pings: bool = True):
    """A client that pairs; with ``answer_pings`` it answers the first ping like the page does."""
    ws = await connect(http, base)
    await ws.send_str(json.dumps({"type": "hello", "token": "tok"}))
    welcome = (await ws.receive()).json()
    assert welcome["type"] == "welcome"
    ping = (await ws.receive(timeout=5)).json()
    assert ping["type"] == "ping"
    if answer_pings:
        await ws.send_str(json.dumps({"type": "pong", "id": ping["id"], "page_ns": time.time_ns()}))
    return ws


def drain(server, n: int, timeout_s: float = 5.0):
    got, deadline = [], time.monotonic() + timeout_s
    while len(got) < n and time.monotonic() < deadline:
        got += server.read(0.05)
    return got


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
        bad = await connect(http, base)
        await bad.send_str(json.dumps({"type": "hello", "token": "nope"}))
        bad_reply = (await bad.receive()).json()
        await bad.receive()
        first = await paired(http, base)
        second = await connect(http, base)
        await second.send_str(json.dumps({"type": "hello", "token": "tok"}))
        busy = (await second.receive()).json()
        await second.receive()
        await first.send_str(frame(1))
        await first.send_str("x" * 5000)  # oversized: dropped and counted, session survives
        await first.send_bytes(b"\x00\x01")
        await first.send_str(frame(2))
        await first.close()
        return bad_reply, bad.close_code, busy, second.close_code

    bad_reply, bad_code, busy, busy_code = run(server, script)
    assert bad_reply == {"type": "refused", "code": "bad_token",
                         "reason": "pairing token wrong: open the address the xr node printed"} and bad_code == 4003
    assert busy["type"] == "refused" and busy["code"] == "busy" and "in control" in busy["reason"] and busy_code == 4009
    frames = drain(server, 3)
    assert [parse_frame(f.data).seq for f in frames[:2]] == [1, 2]
    assert all(f.clock is not None for f in frames[:2])  # the pong mapped the page's clock
    assert frames[2].disconnect  # the server reports the client gone
    assert server.rejections() == {"bad_token": 1, "busy": 1, "oversize": 1, "binary": 1}
    assert server.clients_accepted == 1


def test_a_hello_without_a_token_is_told_the_token_is_missing(server):
    # what a page opened without its ?token= sends; the page shows why it is not paired
    async def script(http, base):
        ws = await connect(http, base)
        await ws.send_str(json.dumps({"type": "hello", "token": "", "session": "s"}))
        reply = (await ws.receive()).json()
        await ws.receive()
        return reply, ws.close_code

    reply, code = run(server, script)
    assert reply == {"type": "refused", "code": "bad_token",
                     "reason": "pairing token missing: open the address the xr node printed"} and code == 4003
    assert server.rejections() == {"bad_token": 1} and server.clients_accepted == 0


@pytest.mark.parametrize("origin", [None, "https://evil.example", "https://127.0.0.1:1", "http://127.0.0.1:{port}",
                                    "null", "https://127.0.0.1:99999"])
def test_a_foreign_origin_cannot_open_the_socket(server, origin):
    async def script(http, base):
        o = origin.replace("{port}", str(server.port)) if origin else None
        with pytest.raises(aiohttp.WSServerHandshakeError) as info:
            await connect(http, base, origin=o)
        return info.value.status

    assert run(server, script) == 403
    assert server.rejections() == {"bad_origin": 1} and server.clients_accepted == 0


def test_an_origin_can_be_allowed_explicitly(tmp_path: Path):
    srv = make_server(tmp_path, "--allow-origin", "https://robot.example:8443")
    try:
        async def script(http, base):
            ws = await connect(http, base, origin="https://robot.example:8443")
            await ws.send_str(json.dumps({"type": "hello", "token": "tok"}))
            reply = (await ws.receive()).json()
            await ws.close()
            return reply

        assert run(srv, script)["type"] == "welcome"
    finally:
        srv.close()


def test_a_socket_without_a_hello_is_closed(tmp_path: Path):
    srv = make_server(tmp_path, "--hello-timeout-s", "0.3")
    try:
        async def script(http, base):
            ws = await connect(http, base)
            reply = (await ws.receive(timeout=5)).json()
            await ws.receive(timeout=5)
            return reply, ws.close_code

        reply, code = run(srv, script)
        assert reply["type"] == "refused" and reply["code"] == "hello_timeout" and "no hello" in reply["reason"]
        assert code == 4002
        assert srv.rejections() == {"hello_timeout": 1}
    finally:
        srv.close()


@pytest.mark.parametrize("first", [frame(1), "[" * 3000, '{"type": "hello", "token": ' + "[" * 500 + "]" * 500 + "}",
                                   '{"type": "hello", "token": "tok", "seq": 1e999}', '{"type": "hello", "token": NaN}'])
def test_anything_but_a_hello_first_is_refused_and_the_server_lives_on(server, first):
    async def script(http, base):
        ws = await connect(http, base)
        await ws.send_str(first)
        reply = (await ws.receive()).json()
        await ws.receive()
        ok = await paired(http, base)  # the server still pairs the next client
        await ok.close()
        return reply, ws.close_code

    reply, code = run(server, script)
    assert reply["type"] == "refused" and reply["code"] == "bad_hello" and code == 4002
    assert server.rejections() == {"bad_hello": 1}
    assert drain(server, 1)[0].disconnect  # the paired client's departure


def test_crafted_frames_cannot_stop_the_disconnect(server):
    # each of these once made the server's own disconnect frame unparsable or stale
    crafted = [frame(2**70), frame(10**300), '{"seq": 1e999}', frame(1, session="x" * 5000)[:4000],
               '{"version": 1, "session": ' + "[" * 900 + "]" * 900 + "}", frame(9_223_372_036_854_775_807)]

    async def script(http, base):
        ws = await paired(http, base)
        for text in crafted:
            await ws.send_str(text)
        await ws.close()

    run(server, script)
    got = drain(server, len(crafted) + 1)
    assert len(got) == len(crafted) + 1 and got[-1].disconnect and not any(f.disconnect for f in got[:-1])


def test_pings_map_the_page_clock(server):
    offset_ns = 3_000_000_000  # the page's clock runs 3 s behind the host's

    async def script(http, base):
        ws = await connect(http, base)
        await ws.send_str(json.dumps({"type": "hello", "token": "tok"}))
        await ws.receive()
        for _ in range(3):
            ping = (await ws.receive(timeout=5)).json()
            await ws.send_str(json.dumps({"type": "pong", "id": ping["id"], "page_ns": time.time_ns() - offset_ns}))
        await ws.send_str(frame(1, sent_ns=time.time_ns() - offset_ns))
        await ws.send_str(json.dumps({"type": "pong", "id": 12345, "page_ns": 1}))  # never asked
        await ws.send_str(json.dumps({"type": "pong", "id": 1, "page_ns": 1e999}))
        await ws.close()

    run(server, script)
    rx = drain(server, 2)[0]
    assert abs(rx.clock.offset_ns - offset_ns) <= rx.clock.uncertainty_at(rx.recv_ns)
    assert rx.clock.uncertainty_at(rx.recv_ns) < 500_000_000  # a round trip on the loopback, even a busy one
    assert server.rejections() == {"bad_control": 1}  # the unknown ping id; 1e999 is refused as a frame later


def test_frames_before_the_first_pong_have_no_clock(server):
    async def script(http, base):
        ws = await paired(http, base, answer_pings=False)
        await ws.send_str(frame(1))
        await ws.close()

    run(server, script)
    got = drain(server, 2)
    assert got[0].clock is None and got[1].disconnect


def test_a_message_over_the_hard_limit_closes_the_socket_and_is_counted(server):
    async def script(http, base):
        ws = await paired(http, base)
        await ws.send_str("x" * (65 * 1024))
        while (await ws.receive(timeout=5)).type == aiohttp.WSMsgType.TEXT:
            pass  # pings, until the server closes the socket
        return ws.closed

    assert run(server, script)
    assert drain(server, 1)[0].disconnect
    assert server.rejections() == {"oversize": 1}


def test_state_is_forwarded_to_the_controlling_page(server):
    async def script(http, base):
        ws = await paired(http, base)
        server.write({"type": "state", "estop_latched": True})
        while (msg := (await ws.receive(timeout=5)).json())["type"] == "ping":
            pass
        await ws.close()
        return msg

    assert run(server, script) == {"type": "state", "estop_latched": True}


@pytest.mark.parametrize("argv, host", [(["--plain-http"], "127.0.0.1"), ([], "0.0.0.0"),
                                        (["--plain-http", "--host", "127.0.0.1"], "127.0.0.1")])
def test_plain_http_binds_the_loopback_only(argv, host):
    assert xr_webxr.parse_args(argv).host == host


@pytest.mark.parametrize("bind", ["0.0.0.0", "192.168.1.20", "localhost", "127.0.0.2"])
def test_plain_http_refuses_any_other_address(bind):
    with pytest.raises(xr_webxr.PlainHttpRefused):
        xr_webxr.parse_args(["--plain-http", "--host", bind])


def test_plain_http_server_serves_the_loopback(tmp_path: Path):
    srv = xr_webxr.build_server(xr_webxr.parse_args(["--plain-http", "--port", "0", "--token", "tok"]))
    srv.connect()
    try:
        async def script():
            async with aiohttp.ClientSession() as http:
                base = f"http://127.0.0.1:{srv.port}"
                ws = await connect(http, base)
                await ws.send_str(json.dumps({"type": "hello", "token": "tok"}))
                reply = (await ws.receive()).json()
                await ws.close()
                return reply

        assert asyncio.run(script())["type"] == "welcome"
        assert srv._runner.addresses[0][0] == "127.0.0.1"
    finally:
        srv.close()


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
