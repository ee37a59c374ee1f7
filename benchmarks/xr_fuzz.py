"""Fuzzing the XR input path: hostile frames by class, counted.

Draws cases of every class of teledora/fakes/xr_feed_fuzz.py (garbage,
truncation, deep nesting, huge and non-finite numbers, bad quaternions,
out-of-range positions, stamp disorder, duplicate keys, oversize, and valid
frames between them) from a seeded generator and runs them through

* the reader (``parse_frame`` + ``FeedAssembler``) in this process: per class,
  how many were accepted, refused (by reason), crashed (any exception but a
  refusal), applied although invalid (accepted while broken by construction,
  or a message that breaks the message rules), and partial updates (the
  assembler's state changed by a refused frame); and the reader's cost per
  frame, side by side with a plain ``json.loads`` of the same text;
* with ``--udp``, the xr UDP node on a real socket (authenticated datagrams on
  127.0.0.1): per class, how many frames the node published, with a valid
  marker frame after each class to attribute them; whether the node survived;
  and the refusals it counted by reason.

    python benchmarks/xr_fuzz.py [--per-class 1000] [--seed 1] [--udp]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import threading
import time
from collections import Counter

import numpy as np

from teledora.fakes.xr_feed_fuzz import CLASSES, FeedFuzzer, message_violations
from teledora.operators.contract.messages import decode, encode
from teledora.operators.xr.feed_assembler import FeedAssembler, StaleFrameError
from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.headset_clock import HOST_CLOCK
from teledora.operators.xr.strict_json import loads_bounded
from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES, MAX_FRAME_DEPTH, parse_frame


def reader(per_class: int, seed: int) -> bool:
    fuzzer = FeedFuzzer(seed)
    assembler = FeedAssembler("fuzz")
    rows: dict[str, Counter] = {k: Counter() for k in CLASSES}
    reasons: dict[str, Counter] = {k: Counter() for k in CLASSES}
    full_us, strict_us, plain_us = [], [], []
    order = [k for k in CLASSES for _ in range(per_class)]
    np.random.default_rng(seed).shuffle(order)
    for kind in ["valid", *order]:
        case = fuzzer.case(kind)
        row = rows[kind]
        row["cases"] += 1
        before = assembler.snapshot()
        t0 = time.perf_counter_ns()
        try:
            msg = assembler.assemble(parse_frame(case.data), case.recv_ns, HOST_CLOCK)
        except (FeedRejected, StaleFrameError) as exc:
            t1 = time.perf_counter_ns()
            row["refused"] += 1
            reasons[kind][getattr(exc, "reason", "reordered")] += 1
            if assembler.snapshot() != before:
                row["partial updates"] += 1
        except Exception as exc:  # what the acceptance counts as a crash
            t1 = time.perf_counter_ns()
            row["crashes"] += 1
            reasons[kind][f"CRASH {type(exc).__name__}"] += 1
        else:
            t1 = time.perf_counter_ns()
            row["accepted"] += 1
            if case.must_refuse or message_violations(msg, case.recv_ns):
                row["invalid applied"] += 1
            encode("XrControllers", msg)
        if kind == "valid":  # the same text read by the bounded reader and by plain json, alternately
            full_us.append((t1 - t0) / 1e3)
            t2 = time.perf_counter_ns()
            loads_bounded(case.data, MAX_FRAME_BYTES, MAX_FRAME_DEPTH)
            t3 = time.perf_counter_ns()
            json.loads(case.data)
            t4 = time.perf_counter_ns()
            strict_us.append((t3 - t2) / 1e3)
            plain_us.append((t4 - t3) / 1e3)
    cols = ("cases", "accepted", "refused", "crashes", "invalid applied", "partial updates")
    print(f"reader (parse + assemble), {sum(r['cases'] for r in rows.values())} cases, seed {seed}")
    print(f"{'class':<16}" + "".join(f"{c:>17}" for c in cols) + "   refusals by reason")
    total = Counter()
    for kind in CLASSES:
        total.update(rows[kind])
        top = ", ".join(f"{r} {n}" for r, n in reasons[kind].most_common(4))
        print(f"{kind:<16}" + "".join(f"{rows[kind][c]:>17}" for c in cols) + f"   {top}")
    print(f"{'all':<16}" + "".join(f"{total[c]:>17}" for c in cols))
    f, s, p = np.array(full_us), np.array(strict_us), np.array(plain_us)
    print(f"valid frames, wall time per frame on {os.cpu_count()} CPUs (median / p99 us): parse + assemble "
          f"{np.median(f):.0f} / {np.percentile(f, 99):.0f}; of which the bounded JSON read {np.median(s):.0f} / "
          f"{np.percentile(s, 99):.0f}, against plain json.loads {np.median(p):.0f} / {np.percentile(p, 99):.0f} "
          f"(ratio of medians {np.median(s) / np.median(p):.1f})")
    return total["crashes"] == total["invalid applied"] == total["partial updates"] == 0


def _stop_when_done():
    from dora.testing import MockNode

    class StopWhenDone(MockNode):
        """The xr node's dora side: no inputs; STOP once ``done`` is set."""

        def __init__(self) -> None:
            super().__init__([])
            self.done = threading.Event()

        def next(self, timeout=None):
            return {"type": "ERROR", "error": "timeout"} if not self.done.is_set() else super().next(timeout)

        def drain(self):
            return [] if not self.done.is_set() else super().drain()

    return StopWhenDone()


def udp(per_class: int, seed: int) -> bool:
    from teledora.devices.xr.udp_feed import UdpFeedSender
    from teledora.nodes.xr import xr_udp

    token = secrets.token_urlsafe(12)
    backend = xr_udp.UdpFeedBackend("127.0.0.1", 0, token)
    backend.connect()
    node = _stop_when_done()
    crashed: list[BaseException] = []

    def run() -> None:
        try:
            xr_udp.main([], node=node, backend=backend)
        except BaseException as exc:  # reported below as a crash
            crashed.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    fuzzer, sender = FeedFuzzer(seed), UdpFeedSender("127.0.0.1", backend.port, token)
    sender.connect()
    sender.pair()

    def send(data: bytes) -> None:
        sender.sock.send(sender.link.seal(data, time.time_ns()) if len(data) <= MAX_FRAME_BYTES else data)
        time.sleep(0.0005)

    def published() -> int:
        return len(node.outputs.get("controllers", []))

    def wait_for(n: int) -> None:
        deadline = time.monotonic() + 10
        while published() < n and time.monotonic() < deadline:
            time.sleep(0.002)

    rows: dict[str, Counter] = {}
    expected = 0
    for kind in CLASSES:
        base = published()
        valid = 0
        for _ in range(per_class):
            case = fuzzer.case(kind, sent_ns=time.time_ns())
            valid += not case.must_refuse
            send(case.data)
        send(fuzzer.case("valid", sent_ns=time.time_ns()).data)  # the marker: everything before it is handled
        expected += valid + 1
        wait_for(expected)
        applied = published() - base - 1
        rows[kind] = Counter(cases=per_class, published=applied, valid=valid, **{"invalid applied": max(0, applied - valid)})
    node.done.set()
    thread.join(20)
    msgs = [decode("XrControllers", v) for v in node.outputs.get("controllers", [])]
    violations = sum(bool(message_violations(m, m["stamp_ns"])) for m in msgs)
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    details = json.loads(diag["details_json"])
    print(f"\nxr UDP node on 127.0.0.1, authenticated datagrams, {per_class} per class + a valid marker after each class")
    print(f"{'class':<16}{'cases':>8}{'valid':>8}{'published':>11}{'invalid applied':>17}")
    for kind in CLASSES:
        r = rows[kind]
        print(f"{kind:<16}{r['cases']:>8}{r['valid']:>8}{r['published']:>11}{r['invalid applied']:>17}")
    print(f"node alive to the end: {not crashed and not thread.is_alive()}; messages breaking the message rules: "
          f"{violations}; refusals counted by the node: {details.get('rejected_by_reason')}; "
          f"dropped (repeated seq): {diag['dropped']}; log lines: {len(node.logs)}")
    return not crashed and violations == 0 and all(r["invalid applied"] == 0 for r in rows.values()) \
        and "internal_error" not in details.get("rejected_by_reason", {})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-class", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--udp", action="store_true", help="also through the xr UDP node on a real socket")
    args = ap.parse_args(argv)
    ok = reader(args.per_class, args.seed)
    if args.udp:
        ok = udp(min(args.per_class, 300), args.seed) and ok
    print("\nPASS: 0 crashes, 0 invalid frames applied, 0 partial updates" if ok else "\nFAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
