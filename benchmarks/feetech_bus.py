"""Feetech bus cost per control tick, through the pty servo emulator.

One arm tick = SYNC_READ of position/velocity/current (15 bytes) from 7 servos
+ SYNC_WRITE of 7 goal positions. Compared side by side with the same data
fetched by 7 single READs, with and without the emulator delaying replies by
their wire time at the configured baud rate, and against the bytes-on-wire
lower bound. Prints median / p99 in ms and the ratios.

    python benchmarks/feetech_bus.py [--ticks 2000] [--baud-rate 1000000]
"""

from __future__ import annotations

import argparse
import statistics
import time

from teledora.fakes.feetech_bus import FakeFeetechBus, arm_servos  # noqa: E402

from teledora.devices.drive.feetech_bus import FeetechBus  # noqa: E402
from teledora.operators.drive import feetech_protocol as fp  # noqa: E402

IDS = list(range(1, 8))
NAMES = ["Present_Position", "Present_Velocity", "Present_Current"]


def pct(samples: list[float], q: float) -> float:
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


def sync_tick(bus: FeetechBus, k: int) -> None:
    bus.sync_read(IDS, NAMES)
    bus.sync_write("Goal_Position", {i: 2048 + (k % 50) for i in IDS})


def single_tick(bus: FeetechBus, k: int) -> None:
    start, size = fp.span(NAMES)
    for i in IDS:
        bus.transact(fp.read(i, start, size), [i], "READ")
    bus.sync_write("Goal_Position", {i: 2048 + (k % 50) for i in IDS})


def measure(tick, wire: bool, baud: int, n: int) -> list[float]:
    with FakeFeetechBus(arm_servos(), baud_rate=baud, emulate_wire_time=wire) as fake:
        bus = FeetechBus(fake.port, baud, timeout_s=0.5)
        bus.connect()
        for k in range(50):
            tick(bus, k)
        out = []
        for k in range(n):
            t0 = time.perf_counter()
            tick(bus, k)
            out.append((time.perf_counter() - t0) * 1e3)
        bus.close()
    return out


def wire_bytes() -> tuple[int, int]:
    start, size = fp.span(NAMES)
    sync = len(fp.sync_read(IDS, start, size)) + 7 * (6 + size) + len(fp.sync_write(42, 2, {i: b"\0\0" for i in IDS}))
    single = 7 * (len(fp.read(1, start, size)) + 6 + size) + len(fp.sync_write(42, 2, {i: b"\0\0" for i in IDS}))
    return sync, single


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ticks", type=int, default=2000)
    ap.add_argument("--baud-rate", type=int, default=1_000_000)
    args = ap.parse_args()
    sync_b, single_b = wire_bytes()
    byte_ms = 10.0 / args.baud_rate * 1e3
    print(f"bytes on wire per tick: sync {sync_b} ({sync_b * byte_ms:.3f} ms at {args.baud_rate} baud), "
          f"7 single reads {single_b} ({single_b * byte_ms:.3f} ms)")
    rows = {}
    for label, tick, wire in (("sync, pty only", sync_tick, False), ("single, pty only", single_tick, False),
                              ("sync, + wire time", sync_tick, True), ("single, + wire time", single_tick, True)):
        s = measure(tick, wire, args.baud_rate, args.ticks)
        rows[label] = s
        print(f"{label:22s} median {statistics.median(s):.3f} ms  p99 {pct(s, 0.99):.3f} ms  (n={len(s)})")
    for env in ("pty only", "+ wire time"):
        a, b = statistics.median(rows[f"single, {env}"]), statistics.median(rows[f"sync, {env}"])
        print(f"ratio single/sync ({env}): {a / b:.2f}x")


if __name__ == "__main__":
    main()
