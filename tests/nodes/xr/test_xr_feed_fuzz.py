"""Fuzzing the xr nodes through their real sockets, with hypothesis: hostile frames
of every class (teledora/fakes/xr_feed_fuzz.py) in authenticated UDP datagrams and
over a paired WebSocket, unauthenticated bytes around them. The node must keep
running, publish exactly the valid frames (each checked against the message
rules), count every refusal by reason with no internal error, and - for the
WebXR page - publish the disconnect when the page goes, whatever it sent."""

from __future__ import annotations

import asyncio
import json
import secrets
import threading
import time
from pathlib import Path

import aiohttp
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from teledora.devices.xr.udp_feed import UdpFeedSender
from teledora.fakes.xr_feed_fuzz import CLASSES, FeedFuzzer, message_violations
from teledora.nodes.xr import xr_udp, xr_webxr
from teledora.operators.contract.messages import decode

from .test_xr_udp import UntilDone

TOKEN = "fuzz-token"
# each example runs a node on real sockets: few examples of long streams, and no shrinking
# (a failure prints its seed and classes, which replay it exactly)
node_settings = settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow],
                         phases=[Phase.explicit, Phase.reuse, Phase.generate])
streams = st.tuples(st.integers(0, 2**32 - 1), st.lists(st.sampled_from(CLASSES), min_size=40, max_size=80))


def flu_position(case_data: bytes) -> list[float]:
    d = json.loads(case_data)
    p = d["hands"]["left"]["position"]
    return p if d["frame"] == "flu" else [-p[2], -p[0], p[1]]


def wait_published(node, n: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while len(node.outputs.get("controllers", [])) < n and time.monotonic() < deadline:
        time.sleep(0.002)


def judge(node, cases) -> None:
    msgs = [decode("XrControllers", v) for v in node.outputs.get("controllers", [])]
    frames = [m for m in msgs if m["left"]["connected"]]
    valid = [c for c in cases if not c.must_refuse]
    assert len(frames) == len(valid), f"published {len(frames)} frames for {len(valid)} valid cases"
    for m, c in zip(frames, valid):
        np.testing.assert_allclose(m["left"]["position"], flu_position(c.data), atol=1e-9)
        assert message_violations(m, m["stamp_ns"]) == []
    details = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert "internal_error" not in details.get("rejected_by_reason", {})


@node_settings
@given(streams)
def test_udp_node_publishes_exactly_the_valid_frames(stream):
    seed, kinds = stream
    fuzzer = FeedFuzzer(seed)
    backend = xr_udp.UdpFeedBackend("127.0.0.1", 0, TOKEN)
    backend.connect()
    node = UntilDone(bound_s=20)
    cases = []

    def send():
        sender = UdpFeedSender("127.0.0.1", backend.port, TOKEN)
        sender.connect()
        sender.pair()
        for i, kind in enumerate(["valid", *kinds]):
            case = fuzzer.case(kind, sent_ns=time.time_ns())
            cases.append(case)
            # a payload over the frame limit cannot be sealed: it goes out bare (and is refused as such)
            datagram = sender.link.seal(case.data, time.time_ns()) if len(case.data) <= 4096 else case.data
            sender.sock.send(datagram)
            sender.sock.send(secrets.token_bytes(i * 7 % 90))  # and garbage between
            if not case.must_refuse:  # paced by the valid frames, so the socket buffer never overflows
                wait_published(node, sum(not c.must_refuse for c in cases))
        wait_published(node, sum(not c.must_refuse for c in cases))
        time.sleep(0.05)
        sender.close()
        node.done.set()

    threading.Thread(target=send, daemon=True).start()
    xr_udp.main([], node=node, backend=backend)
    judge(node, cases)


@node_settings
@given(streams)
def test_webxr_node_publishes_exactly_the_valid_frames_and_always_the_disconnect(tmp_path_factory, stream):
    seed, kinds = stream
    fuzzer = FeedFuzzer(seed)
    args = xr_webxr.parse_args(["--host", "127.0.0.1", "--port", "0", "--token", TOKEN,
                                "--cert-dir", str(tmp_path_factory.getbasetemp() / "cert")])
    server = xr_webxr.build_server(args)
    node = UntilDone(bound_s=30)
    cases = []

    async def page(base: str):
        async with aiohttp.ClientSession() as http:
            ws = await http.ws_connect(f"{base}/ws", ssl=False, headers={"Origin": base})
            await ws.send_str(json.dumps({"type": "hello", "token": TOKEN}))
            assert (await ws.receive()).json()["type"] == "welcome"

            async def answer_pings():  # like the page: every ping answered at once
                async for msg in ws:
                    d = json.loads(msg.data)
                    if d.get("type") == "ping":
                        await ws.send_str(json.dumps({"type": "pong", "id": d["id"], "page_ns": time.time_ns()}))

            answering = asyncio.create_task(answer_pings())
            deadline = time.monotonic() + 20
            while not server.diagnostics_details()["round_trips"] and time.monotonic() < deadline:
                await asyncio.sleep(0.01)  # a loaded machine can make a round trip too long to use
            for kind in ["valid", *kinds]:
                case = fuzzer.case(kind, sent_ns=time.time_ns())
                cases.append(case)
                # a WebSocket text message is UTF-8 by definition: invalid bytes go as replacement characters;
                # one over aiohttp's 64 KiB limit would close the socket early, so a 5000-byte one stands in
                await ws.send_str(case.data.decode("utf-8", "replace") if len(case.data) < 60_000 else "x" * 5000)
            await asyncio.sleep(0.05)
            answering.cancel()
            await ws.close()

    def client():
        while not server.port:
            time.sleep(0.01)
        asyncio.run(page(f"https://127.0.0.1:{server.port}"))
        deadline = time.monotonic() + 10
        want = sum(not c.must_refuse for c in cases) + 1
        while len(node.outputs.get("controllers", [])) < want and time.monotonic() < deadline:
            time.sleep(0.01)
        node.done.set()

    threading.Thread(target=client, daemon=True).start()
    xr_webxr.main([], node=node, server=server)
    judge(node, cases)
    last = decode("XrControllers", node.outputs["controllers"][-1])
    assert not last["left"]["connected"] and not last["right"]["connected"] and not last["focused"]
