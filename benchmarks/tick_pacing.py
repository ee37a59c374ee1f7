"""What a node's periodic step costs: a dora timer input against a deadline the node keeps itself.

Several nodes (ik at 100 Hz, teleop, base and lift at 50 Hz, the
cameras, renderer, episodes and scan_merger at 10 Hz) take a ``tick`` input
from ``dora/timer/millis/N`` to run a step when no data arrives. Each tick is
one more delivery to a Python process. The alternative is event-driven: no
timer input, and the node waits in ``node.next(timeout)`` until its own next
deadline or the next message, whichever comes first.

This runs both in one dataflow, side by side: a source sends a 20-field
struct at ``--rate-hz``; node ``timer`` takes it and a ``--period-ms`` timer
input, node ``deadline`` takes it alone and keeps a ``--period-ms`` deadline
with ``next(timeout)``. Both count their steps and messages and do nothing
else. A third node, ``deadline_bt``, is ``deadline`` with Rust library
backtraces on (``RUST_LIB_BACKTRACE=1``, what ``RUST_BACKTRACE=1`` in a shell
gives a process that does not set the former): dora reports each timeout as
an error, and with backtraces on each error captures one (teledora's nodes
and launchers turn them off, ``teledora/runtime/library_backtraces.py``).
Per round (``--rounds``, a fresh dataflow each) it samples the three
processes' CPU over ``--seconds`` after a warm-up and prints cores, steps a
second and PSS at the end of the window for each, then the medians and the
ratios to ``timer``.

    python benchmarks/tick_pacing.py [--seconds 20] [--rounds 3] [--rate-hz 90] [--period-ms 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dora_delivery import SOURCE, _env  # noqa: E402  (the same 90 Hz struct source)
from stack_cpu import _cpu_s, _descendants, _pss_kb  # noqa: E402

VARIANTS = ("timer", "deadline", "deadline_bt")

# each writes {"steps": .., "messages": ..} to the path in argv[1] at the end
TIMER = """
import json, sys
from dora import Node
steps = messages = 0
for event in Node():
    if event["type"] == "INPUT":
        if event["id"] == "tick":
            steps += 1
        else:
            messages += 1
json.dump({"steps": steps, "messages": messages}, open(sys.argv[1], "w"))
"""

DEADLINE = """
import json, sys, time
from dora import Node
node = Node()
period = float(sys.argv[2]) / 1000.0
steps = messages = 0
due = time.monotonic() + period
while True:
    wait = due - time.monotonic()
    event = node.next(wait) if wait > 0 else {"type": "DUE"}
    if event is None or event["type"] == "STOP":  # None: the stream has ended
        break
    now = time.monotonic()
    if now >= due:  # a timeout (dora reports it as an ERROR event) or a message at the deadline
        steps += 1
        due = due + period if due + period > now else now + period  # late: the next period from now
    if event["type"] == "INPUT":
        messages += 1
json.dump({"steps": steps, "messages": messages}, open(sys.argv[1], "w"))
"""


def write_flow(tmp: Path, rate_hz: float, period_ms: int) -> Path:
    for name, text in (("source.py", SOURCE), ("timer.py", TIMER), ("deadline.py", DEADLINE), ("deadline_bt.py", DEADLINE)):
        (tmp / name).write_text(text)
    source_ms = max(1, round(1000.0 / rate_hz))
    nodes = [
        {"id": "source", "path": str(tmp / "source.py"), "inputs": {"tick": f"dora/timer/millis/{source_ms}"},
         "outputs": ["out"]},
        {"id": "timer", "path": str(tmp / "timer.py"), "args": str(tmp / "timer.json"),
         "inputs": {"x": "source/out", "tick": f"dora/timer/millis/{period_ms}"}},
        {"id": "deadline", "path": str(tmp / "deadline.py"), "args": f"{tmp / 'deadline.json'} {period_ms}",
         "inputs": {"x": "source/out"}},
        {"id": "deadline_bt", "path": str(tmp / "deadline_bt.py"), "args": f"{tmp / 'deadline_bt.json'} {period_ms}",
         "inputs": {"x": "source/out"}, "env": {"RUST_LIB_BACKTRACE": "1"}},
    ]
    path = tmp / "pacing.yml"
    path.write_text(yaml.safe_dump({"nodes": nodes}, sort_keys=False))
    return path


def _variant_of(pid: int) -> str | None:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None
    for variant in VARIANTS:
        if f"{variant}.py" in cmd:
            return variant
    return None


def measure(flow: Path, seconds: float, warmup_s: float = 6.0) -> dict[str, dict]:
    """One run of the dataflow: per variant, cores over the window and its
    steps and messages a second over the whole run (from the node's counts)."""
    for variant in VARIANTS:
        (flow.parent / f"{variant}.json").unlink(missing_ok=True)
    run_s = int(seconds + warmup_s + 3)
    proc = subprocess.Popen([str(Path(sys.executable).parent / "dora"), "run", str(flow), "--stop-after", f"{run_s}s"],
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=flow.parent)
    t_start = time.monotonic()
    time.sleep(warmup_s)
    pids = {}
    for pid in _descendants(proc.pid):
        variant = _variant_of(pid)
        if variant:
            pids[variant] = pid
    first = {v: (time.monotonic(), _cpu_s(p)) for v, p in pids.items()}
    time.sleep(seconds)
    last = {v: (time.monotonic(), _cpu_s(p)) for v, p in pids.items()}
    pss_mb = {v: _pss_kb(p) / 1024 for v, p in pids.items()}
    proc.wait()
    wall = time.monotonic() - t_start
    out = {}
    for variant in VARIANTS:
        if variant not in first or first[variant][1] is None or last[variant][1] is None:
            raise RuntimeError(f"node {variant!r} was not found running (see `dora run {flow}`)")
        counts_path = flow.parent / f"{variant}.json"
        if not counts_path.exists():
            raise RuntimeError(f"node {variant!r} did not write its counts: it did not end cleanly")
        counts = json.loads(counts_path.read_text())
        (t0, c0), (t1, c1) = first[variant], last[variant]
        out[variant] = {"cores": (c1 - c0) / (t1 - t0), "steps_hz": counts["steps"] / wall,
                        "messages_hz": counts["messages"] / wall, "pss_mb": pss_mb[variant]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="measured window per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rate-hz", type=float, default=90.0, help="the source's message rate")
    ap.add_argument("--period-ms", type=int, default=10, help="the step period of both nodes")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.seconds <= 0 or args.period_ms < 1 or args.rate_hz <= 0:
        ap.error("--rounds, --seconds, --period-ms and --rate-hz must be positive")
    rows: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="tick-pacing-") as tmp:
        flow = write_flow(Path(tmp), args.rate_hz, args.period_ms)
        for r in range(args.rounds):
            res = measure(flow, args.seconds)
            for variant in VARIANTS:
                rows[variant].append(res[variant])
            print(f"round {r + 1}/{args.rounds}: " + "; ".join(
                f"{v} {res[v]['cores']:.4f} cores, {res[v]['steps_hz']:.1f} steps/s, {res[v]['messages_hz']:.1f} msg/s, "
                f"{res[v]['pss_mb']:.0f} MB PSS"
                for v in VARIANTS), flush=True)
    load1 = os.getloadavg()
    print(f"\n{args.rate_hz:.0f} Hz of messages, a step every {args.period_ms} ms, median over {args.rounds} rounds "
          f"({os.cpu_count()} CPUs, load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end)")
    print(f"{'paced by':<12} {'cores':>7} {'steps/s':>8} {'msg/s':>7} {'PSS MB':>7}")
    keys = ("cores", "steps_hz", "messages_hz", "pss_mb")
    med = {v: {k: statistics.median(x[k] for x in rows[v]) for k in keys} for v in VARIANTS}
    for variant in VARIANTS:
        m = med[variant]
        print(f"{variant:<12} {m['cores']:7.4f} {m['steps_hz']:8.1f} {m['messages_hz']:7.1f} {m['pss_mb']:7.0f}")
    for variant in VARIANTS[1:]:
        ratios = [d["cores"] / t["cores"] for d, t in zip(rows[variant], rows["timer"]) if t["cores"] > 0]
        if ratios:
            print(f"{variant} / timer, cores: median {statistics.median(ratios):.2f} "
                  f"(rounds {min(ratios):.2f}-{max(ratios):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
