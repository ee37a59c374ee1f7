"""How well the WebXR server maps the page's clock: measured against a known truth.

Starts the WebXR server device on 127.0.0.1 (TLS, as the node builds it) and
a client that behaves like the page: it pairs, answers every ping at once
with its own clock, which runs a known offset behind the host's, and sends
frames at ``--rate-hz`` whose pose was sampled ``--link-delay-ms`` before it
leaves (a stand-in for a slow link: the frame is held that long). For every
frame the server hands on, it prints, side by side,

* the true sample age on arrival (host receive time minus the true host time
  of the sample), and the age the mapping gives (receive time minus the
  mapped stamp) - their difference is what the mapping adds, never negative;
* the estimate's uncertainty bound and the true offset error.

    python benchmarks/xr_clock.py [--seconds 10] [--rate-hz 90] [--link-delay-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path

import aiohttp
import numpy as np

OFFSET_NS = 7_000_000_000  # the page's clock runs 7 s behind the host's


async def page(base: str, token: str, seconds: float, rate_hz: float, delay_ms: float) -> int:
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(f"{base}/ws", ssl=False, headers={"Origin": base})
        await ws.send_str(json.dumps({"type": "hello", "token": token}))
        await ws.receive()

        async def answer() -> None:
            async for msg in ws:
                d = json.loads(msg.data)
                if d.get("type") == "ping":
                    await ws.send_str(json.dumps({"type": "pong", "id": d["id"], "page_ns": time.time_ns() - OFFSET_NS}))

        answering = asyncio.create_task(answer())
        await asyncio.sleep(0.1)  # the first round trip
        sent, start = 0, time.perf_counter()
        hand = {"connected": True, "pose_valid": True, "position": [0.0, 1.2, -0.3], "orientation": [0, 0, 0, 1]}

        async def deliver(seq: int, sample_ns: int) -> None:
            await asyncio.sleep(delay_ms / 1e3)  # the frame is held on the link this long
            left = dict(hand, pose_ns=sample_ns, input_ns=sample_ns)
            frame = {"version": 1, "session": "clock", "seq": seq, "sent_ns": time.time_ns() - OFFSET_NS,
                     "frame": "webxr", "hands": {"left": left, "right": {"connected": False}}}
            await ws.send_str(json.dumps(frame))

        pending = []
        while time.perf_counter() - start < seconds:
            sent += 1
            pending.append(asyncio.create_task(deliver(sent, time.time_ns() - OFFSET_NS)))  # sampled now
            await asyncio.sleep(max(0.0, start + sent / rate_hz - time.perf_counter()))
        await asyncio.gather(*pending)
        answering.cancel()
        await ws.close()
        return sent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rate-hz", type=float, default=90.0)
    ap.add_argument("--link-delay-ms", type=float, default=0.0)
    args = ap.parse_args(argv)
    from teledora.nodes.xr import xr_webxr
    from teledora.operators.xr.xr_feed_format import parse_frame

    with tempfile.TemporaryDirectory() as d:
        server = xr_webxr.build_server(xr_webxr.parse_args(["--host", "127.0.0.1", "--port", "0", "--token", "clock",
                                                            "--cert-dir", str(Path(d))]))
        server.connect()
        try:
            sent = asyncio.run(page(f"https://127.0.0.1:{server.port}", "clock", args.seconds, args.rate_hz,
                                    args.link_delay_ms))
            frames = []
            deadline = time.monotonic() + 5
            while len(frames) < sent + 1 and time.monotonic() < deadline:
                frames += server.read(0.05)
        finally:
            server.close()
    true_age, mapped_age, bound, error = [], [], [], []
    for rx in frames:
        if rx.disconnect or rx.clock is None:
            continue
        pose_ns = parse_frame(rx.data).hands["left"].pose_ns
        true_age.append(rx.recv_ns - (pose_ns + OFFSET_NS))
        mapped_age.append(rx.recv_ns - rx.clock.earliest_host_ns(pose_ns))
        bound.append(rx.clock.uncertainty_at(rx.recv_ns))
        error.append(abs(rx.clock.offset_ns - OFFSET_NS))
    t, m, b, e = (np.array(x) / 1e6 for x in (true_age, mapped_age, bound, error))
    print(f"WebXR server on 127.0.0.1 (TLS), {len(t)} of {sent} frames mapped, {args.rate_hz:.0f} Hz, "
          f"link delay {args.link_delay_ms:g} ms, pings every 0.5 s ({os.cpu_count()} CPUs)")
    print(f"{'ms':<34}{'median':>8}{'p90':>8}{'p99':>8}{'max':>8}")
    for name, v in (("true sample age on arrival", t), ("mapped sample age on arrival", m),
                    ("mapped minus true (added)", m - t), ("uncertainty bound", b), ("true offset error", e)):
        print(f"{name:<34}{np.median(v):>8.2f}{np.percentile(v, 90):>8.2f}{np.percentile(v, 99):>8.2f}{v.max():>8.2f}")
    print(f"mapped age below the true age: {int(np.sum(m < t))} frames (must be 0); "
          f"offset error beyond the bound: {int(np.sum(e > b))} frames (must be 0)")
    return 0 if np.all(m >= t) and np.all(e <= b) else 1


if __name__ == "__main__":
    raise SystemExit(main())
