"""What one message costs a Python dora node, and whether dora's operator runtime is cheaper.

Runs three small dataflows one after the other, ``--rounds`` times each in
alternation: a source node sending a 20-field struct at ``--rate-hz``
through a chain of three echo stages to a sink. In ``node`` the echo stages
are custom Python nodes (as every teledora node is); in ``operator`` each is
a Python operator in its own runtime node (``operator: python:``); in
``spaced`` each is a custom node reading through teledora's ``NodeIO`` with
``TELEDORA_BATCH_SPACING_S`` set to ``--spacing-s`` (its takes at least that
far apart, as the sensing nodes of sim.yml read). Each echo receives the
message and sends it on, nothing else. Per round it samples
``/proc`` for every echo process after a warm-up and prints, per variant, the
median over rounds and echo stages of:

* CPU per message (ms) and cores per stage;
* the share of that CPU spent in the process's other threads than the Python
  one (dora's transport and runtime threads: what a message costs before the
  node's own code runs);
* peak PSS per stage;
* voluntary context switches per message, summed over the process's
  threads (each is a thread going to sleep to wait, so each is paid for by
  a wake-up: how often one message hands the CPU around inside one node;
  preemptions, which depend on the load, are left out), and the number of
  threads.

It also asks dora for three operators in one runtime node (the only way dora
offers to run several nodes' logic in one process) and prints its answer.

    python benchmarks/dora_delivery.py [--seconds 20] [--rate-hz 90] [--rounds 2] [--spacing-s 0.05]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

from teledora.runtime.library_backtraces import without_library_backtraces

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stack_cpu import CLK_TCK, _descendants, _pss_kb  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STAGES = ("e1", "e2", "e3")

SOURCE = """
import pyarrow as pa
from dora import Node
node = Node()
struct = pa.struct([(f"f{i}", pa.float64()) for i in range(20)])
n = 0
for event in node:
    if event["type"] == "INPUT":
        n += 1
        node.send_output("out", pa.array([{f"f{i}": float(n + i) for i in range(20)}], type=struct), {"seq": n})
"""

ECHO_NODE = """
from dora import Node
node = Node()
for event in node:
    if event["type"] == "INPUT":
        node.send_output("out", event["value"], event["metadata"])
"""

ECHO_SPACED = """
from teledora.runtime.node_io import NodeIO, make_node
io = NodeIO(make_node(), "echo", ends_with=())
while (batch := io.next_batch()) is not None:
    for event in batch:
        if event["type"] == "INPUT":
            io.node.send_output("out", event["value"], event["metadata"])
"""

ECHO_OPERATOR = """
from dora import DoraStatus
class Operator:
    def on_event(self, dora_event, send_output):
        if dora_event["type"] == "INPUT":
            send_output("out", dora_event["value"], dora_event["metadata"])
        return DoraStatus.CONTINUE
"""

SINK = """
from dora import Node
for event in Node():
    pass
"""


def write_flows(tmp: Path, rate_hz: float, spacing_s: float) -> dict[str, Path]:
    for name, text in (("source.py", SOURCE), ("echo_node.py", ECHO_NODE), ("echo_spaced.py", ECHO_SPACED),
                       ("echo_operator.py", ECHO_OPERATOR), ("sink.py", SINK)):
        (tmp / name).write_text(text)
    period_ms = max(1, round(1000.0 / rate_hz))
    source = {"id": "source", "path": str(tmp / "source.py"), "inputs": {"tick": f"dora/timer/millis/{period_ms}"}, "outputs": ["out"]}
    flows = {}
    prev = "source/out"
    nodes = [source]
    for stage in STAGES:
        nodes.append({"id": stage, "path": str(tmp / "echo_node.py"), "inputs": {"x": prev}, "outputs": ["out"]})
        prev = f"{stage}/out"
    nodes.append({"id": "sink", "path": str(tmp / "sink.py"), "inputs": {"x": prev}})
    flows["node"] = nodes
    prev = "source/out"
    nodes = [source]
    for stage in STAGES:
        nodes.append({"id": stage, "path": str(tmp / "echo_spaced.py"), "inputs": {"x": prev}, "outputs": ["out"],
                      "env": {"TELEDORA_BATCH_SPACING_S": f"{spacing_s:g}"}})
        prev = f"{stage}/out"
    nodes.append({"id": "sink", "path": str(tmp / "sink.py"), "inputs": {"x": prev}})
    flows["spaced"] = nodes
    prev = "source/out"
    nodes = [source]
    for stage in STAGES:
        op = {"python": str(tmp / "echo_operator.py"), "inputs": {"x": prev}, "outputs": ["out"]}
        nodes.append({"id": stage, "operator": op})
        prev = f"{stage}/out"  # a single operator's outputs are addressed by its node
    nodes.append({"id": "sink", "path": str(tmp / "sink.py"), "inputs": {"x": prev}})
    flows["operator"] = nodes
    merged = {"id": "echoes", "operators": []}
    prev = "source/out"
    for stage in STAGES:
        merged["operators"].append({"id": stage, "python": str(tmp / "echo_operator.py"), "inputs": {"x": prev}, "outputs": ["out"]})
        prev = f"echoes/{stage}/out"
    flows["merged"] = [source, merged, {"id": "sink", "path": str(tmp / "sink.py"), "inputs": {"x": prev}}]
    paths = {}
    for name, nodes in flows.items():
        paths[name] = tmp / f"{name}.yml"
        paths[name].write_text(yaml.safe_dump({"nodes": nodes}, sort_keys=False))
    return paths


def _env() -> dict[str, str]:
    env = without_library_backtraces(dict(os.environ))  # as teledora starts dora
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def _stage_of(pid: int) -> str | None:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        env = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    if "echo_node.py" not in cmd and "echo_spaced.py" not in cmd and "start_runtime" not in cmd:
        return None
    for stage in STAGES:
        if f"node_id: {stage}\n".encode() in env:
            return stage
    return None


def _threads_cpu(pid: int) -> tuple[float, float, int, int] | None:
    """(CPU s of the Python main thread, CPU s of all other threads,
    voluntary context switches of all threads, number of threads) of a process."""
    main = other = 0.0
    switches = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
        for tid in tids:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            cpu = (int(fields[11]) + int(fields[12])) / CLK_TCK
            if int(tid) == pid:
                main += cpu
            else:
                other += cpu
            for line in Path(f"/proc/{pid}/task/{tid}/status").read_text().splitlines():
                if line.startswith("voluntary_ctxt_switches:"):  # a sleep: the thread waited for something
                    switches += int(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return main, other, switches, len(tids)


def measure(flow: Path, seconds: float, rate_hz: float, warmup_s: float = 6.0) -> list[dict]:
    """Runs ``flow``; per echo stage: cores, ms per message, other-thread
    share, peak PSS, context switches per message and threads."""
    proc = subprocess.Popen([str(Path(sys.executable).parent / "dora"), "run", str(flow), "--stop-after", f"{int(seconds + warmup_s + 2)}s"],
                            env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=flow.parent)
    t_start = time.monotonic()
    first: dict[int, tuple[float, tuple[float, float, int, int]]] = {}
    last: dict[int, tuple[float, tuple[float, float, int, int]]] = {}
    stage: dict[int, str] = {}
    pss: dict[int, int] = {}
    while proc.poll() is None:
        now = time.monotonic()
        if now - t_start >= warmup_s:
            for pid in _descendants(proc.pid):
                if pid not in stage:
                    name = _stage_of(pid)
                    if name is None:
                        continue
                    stage[pid] = name
                cpu = _threads_cpu(pid)
                if cpu is None:
                    continue
                first.setdefault(pid, (now, cpu))
                if now - first[pid][0] <= seconds:
                    last[pid] = (now, cpu)
                    pss[pid] = max(pss.get(pid, 0), _pss_kb(pid))
        time.sleep(0.5)
    out = []
    for pid, (t0, (m0, o0, s0, _)) in first.items():
        t1, (m1, o1, s1, threads) = last[pid]
        if t1 - t0 < seconds / 2:
            continue
        total = (m1 - m0) + (o1 - o0)
        cores = total / (t1 - t0)
        out.append({"stage": stage[pid], "cores": cores, "ms_per_msg": cores / rate_hz * 1e3,
                    "other_share": (o1 - o0) / total if total else float("nan"), "pss_mb": pss[pid] / 1024,
                    "switches_per_msg": (s1 - s0) / ((t1 - t0) * rate_hz), "threads": threads})
    return out


def merged_answer(flow: Path) -> str:
    """What dora says to three Python operators in one runtime node."""
    res = subprocess.run([str(Path(sys.executable).parent / "dora"), "run", str(flow), "--stop-after", "5s"],
                         env=_env(), capture_output=True, text=True, cwd=flow.parent, timeout=60)
    text = res.stdout + res.stderr
    for line in text.splitlines():
        if "Python Operator" in line or "operator" in line.lower() and "fail" in line.lower():
            return f"exit {res.returncode}: {line.strip()}"
    return f"exit {res.returncode}" + (" (ran)" if res.returncode == 0 else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=20.0, help="measured window per round")
    ap.add_argument("--rate-hz", type=float, default=90.0)
    ap.add_argument("--rounds", type=int, default=2, help="runs per variant, alternating")
    ap.add_argument("--spacing-s", type=float, default=0.05, help="TELEDORA_BATCH_SPACING_S of the spaced echo")
    args = ap.parse_args(argv)
    variants = ("node", "operator", "spaced")
    with tempfile.TemporaryDirectory(prefix="dora-delivery-") as tmp:
        flows = write_flows(Path(tmp), args.rate_hz, args.spacing_s)
        results: dict[str, list[dict]] = {v: [] for v in variants}
        load0 = os.getloadavg()
        for r in range(args.rounds):
            for variant in (variants if r % 2 == 0 else variants[::-1]):
                rows = measure(flows[variant], args.seconds, args.rate_hz)
                results[variant] += rows
                print(f"round {r + 1}/{args.rounds} {variant:8s}: " + ", ".join(f"{x['stage']} {x['ms_per_msg']:.3f} ms/msg" for x in sorted(rows, key=lambda x: x["stage"])), flush=True)
        load1 = os.getloadavg()
        answer = merged_answer(flows["merged"])
    print(f"\none echo stage, {args.rate_hz:.0f} Hz of a 20-field struct, median over {args.rounds} rounds x {len(STAGES)} stages "
          f"({os.cpu_count()} CPUs, load average {load0[0]:.2f} at the start, {load1[0]:.2f} at the end)")
    print(f"{'variant':<10} {'ms CPU/msg':>10} {'cores':>7} {'other threads':>14} {'peak PSS MB':>12} "
          f"{'switches/msg':>13} {'threads':>8}")
    med = {}
    for variant, rows in results.items():
        if not rows:
            print(f"{variant:<10} no echo process measured")
            continue
        m = {k: statistics.median(x[k] for x in rows)
             for k in ("ms_per_msg", "cores", "other_share", "pss_mb", "switches_per_msg", "threads")}
        med[variant] = m
        print(f"{variant:<10} {m['ms_per_msg']:10.3f} {m['cores']:7.3f} {m['other_share']:13.0%} {m['pss_mb']:12.1f} "
              f"{m['switches_per_msg']:13.1f} {m['threads']:8.0f}")
    for variant in ("operator", "spaced"):
        if variant in med and "node" in med:
            print(f"{variant} / node, CPU per message: {med[variant]['ms_per_msg'] / med['node']['ms_per_msg']:.2f}")
    print(f"three Python operators in one runtime node: {answer}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
