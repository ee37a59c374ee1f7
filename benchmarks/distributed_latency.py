"""Round trip of a small message within one dora daemon and across two daemons.

A coordinator and two daemons (`robot`, `workstation`) run on this host, as in
tests/dataflows/test_distributed.py. A `ping` node sends a JointState-sized
message (14 float64 + stamp) every 10 ms; a `pong` node echoes it; ping
records the round trip on the host clock. The same two-node dataflow is
started alternately with both nodes on `robot` (same daemon: shared memory)
and with `pong` on `workstation` (across daemons), so the two cases are
measured side by side under the same load.

    python benchmarks/distributed_latency.py [--samples 500] [--rounds 2]

On one host the cross-daemon path is loopback TCP through the daemons; between
two machines add the network's own round trip.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

BIN = Path(sys.executable).parent

PING = '''
import json, os, time
import pyarrow as pa
from dora import Node
node = Node()
want, sent, rtts = int(os.environ["SAMPLES"]), {}, []
seq = 0
for event in node:
    if event["type"] != "INPUT":
        continue
    if event["id"] == "tick":
        if seq < want + 20:
            sent[seq] = time.perf_counter_ns()
            node.send_output("out", pa.array([float(seq)] + [0.1] * 14), {"seq": seq})
            seq += 1
    elif event["id"] == "back":
        k = int(event["metadata"]["seq"])
        if k >= 20 and k in sent:  # the first 20 warm the path up
            rtts.append(time.perf_counter_ns() - sent.pop(k))
        if len(rtts) >= want:
            break
with open(os.environ["RESULT"], "w") as f:
    json.dump(rtts, f)
'''

PONG = '''
from dora import Node
node = Node()
for event in node:
    if event["type"] == "INPUT":
        node.send_output("back", event["value"], event["metadata"])
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _dataflow(root: Path, pong_machine: str, samples: int, result: Path) -> Path:
    flow = {"nodes": [
        {"id": "ping", "path": "python", "args": f"-u {root / 'ping.py'}", "deploy": {"machine": "robot"},
         "env": {"SAMPLES": str(samples), "RESULT": str(result)},
         "inputs": {"tick": "dora/timer/millis/10", "back": "pong/back"}, "outputs": ["out"]},
        {"id": "pong", "path": "python", "args": f"-u {root / 'pong.py'}", "deploy": {"machine": pong_machine},
         "inputs": {"x": "ping/out"}, "outputs": ["back"]},
    ]}
    path = root / f"rtt_{pong_machine}.yml"
    path.write_text(yaml.safe_dump(flow))
    return path


def _percentile(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="teledora-rtt-"))
    (root / "ping.py").write_text(PING)
    (root / "pong.py").write_text(PONG)
    port = _free_port()
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", RUST_BACKTRACE="0",
               DORA_COORDINATOR_PORT=str(port))
    procs = []

    def spawn(name: str, cmd: list[str]) -> None:
        (root / name).mkdir()
        procs.append(subprocess.Popen([str(BIN / "dora"), *cmd], cwd=root / name, env=env, start_new_session=True,
                                      stdout=open(root / f"{name}.log", "wb"), stderr=subprocess.STDOUT))

    results: dict[str, list[float]] = {"same daemon": [], "across daemons": []}
    try:
        spawn("coordinator", ["coordinator", "--port", str(port), "--store", "memory", "--quiet"])
        time.sleep(1.0)
        for machine in ("robot", "workstation"):
            spawn(machine, ["daemon", "--machine-id", machine, "--local-listen-port", str(_free_port()), "--zenoh-no-multicast"])
        time.sleep(3.0)
        for r in range(args.rounds):
            for label, pong_machine in (("same daemon", "robot"), ("across daemons", "workstation")):
                result = root / f"result_{r}_{pong_machine}.json"
                flow = _dataflow(root, pong_machine, args.samples, result)
                name = f"rtt-{r}-{pong_machine}"
                subprocess.run([str(BIN / "dora"), "start", str(flow), "--name", name, "--detach"], env=env,
                               capture_output=True, check=True, timeout=60)
                deadline = time.monotonic() + 30 + args.samples * 0.02
                while not result.exists() and time.monotonic() < deadline:
                    time.sleep(0.2)
                time.sleep(0.2)
                subprocess.run([str(BIN / "dora"), "stop", "--name", name, "--grace-duration", "2s"], env=env,
                               capture_output=True, timeout=30)
                if not result.exists():
                    print(f"round {r} {label}: no result (see {root})")
                    continue
                results[label] += [v / 1e6 for v in json.loads(result.read_text())]
    finally:
        subprocess.run([str(BIN / "dora"), "destroy", "--force"], env=env, capture_output=True, timeout=30)
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            p.wait(timeout=10)
    print(f"round trip of a 15 x float64 message at 100 Hz, {args.rounds} alternating rounds:")
    for label, values in results.items():
        if values:
            print(f"  {label:15s} n={len(values):5d}  median {statistics.median(values):6.3f} ms  "
                  f"p99 {_percentile(values, 0.99):6.3f} ms  max {max(values):6.3f} ms")
    same, across = results["same daemon"], results["across daemons"]
    if same and across:
        print(f"  across / same: median x{statistics.median(across) / statistics.median(same):.2f}, "
              f"p99 x{_percentile(across, 0.99) / _percentile(same, 0.99):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
