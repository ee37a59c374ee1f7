"""Base node command-to-wheel latency, in a real dora dataflow and in process.

Dataflow: a source node sends ``base_cmd`` at 20 Hz, alternating between two
twists and stamping each with the host clock; the base node (sim variant, or
the Feetech variant on the pty servo emulator with ``--feetech``) runs on a
10 ms timer; a sink measures host time from a command's stamp to the first
``wheel_commands`` that carries it. That latency is mostly waiting for the
next tick (uniform 0..10 ms) plus two dora hops. In process: the per-tick cost
of the node's step (decode, quantize, odometry, encode) without dora.

    python benchmarks/base_latency.py [--seconds 10] [--tick-ms 10] [--feetech]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]

SOURCE = '''
import time
from dora import Node
from teledora.operators.contract.messages import encode
node = Node()
k = 0
for ev in node:
    if ev["type"] == "INPUT":
        k += 1
        f = 0.1 if k % 2 else 0.2
        node.send_output("base_cmd", encode("BaseCommand", {"stamp_ns": time.time_ns(), "forward_m_s": f, "left_m_s": 0.0, "yaw_rad_s": 0.0}))
'''

SINK = '''
import json, os, time
from dora import Node
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.omni_drive import OmniDrive
from teledora.operators.contract.messages import decode
node = Node()
DRIVE = OmniDrive(load_drive_config().base.geometry)
expect = {DRIVE.body_to_wheel_raw(0.1, 0.0, 0.0)[0]: 0.1, DRIVE.body_to_wheel_raw(0.2, 0.0, 0.0)[0]: 0.2}
pending = {}
lat = []
for ev in node:
    if ev["type"] != "INPUT":
        continue
    now = time.time_ns()
    if ev["id"] == "cmd":
        m = decode("BaseCommand", ev["value"])
        pending[m["forward_m_s"]] = m["stamp_ns"]
    else:
        w = decode("WheelCommands", ev["value"])
        f = expect.get(w["left"])
        if f in pending:
            lat.append((now - pending.pop(f)) / 1e6)
            pending.clear()
with open(os.environ["LATENCY_OUT"], "w") as fh:
    json.dump(lat, fh)
'''


def pct(s, q):
    s = sorted(s)
    return s[min(len(s) - 1, int(q * len(s)))]


def dataflow(tmp: Path, tick_ms: int, feetech_port: str | None) -> Path:
    base = {
        "id": "base",
        "path": str(REPO / "nodes" / "drive" / ("base_feetech.py" if feetech_port else "base_sim.py")),
        "inputs": {"base_cmd": "source/base_cmd", "tick": f"dora/timer/millis/{tick_ms}"},
        "outputs": ["wheel_commands", "odom", "diagnostics"],
    }
    if feetech_port:
        base["args"] = f"--port {feetech_port} --timeout-s 0.2"
    (tmp / "source.py").write_text(SOURCE)
    (tmp / "sink.py").write_text(SINK)
    nodes = [
        {"id": "source", "path": "source.py", "inputs": {"tick": "dora/timer/millis/47"}, "outputs": ["base_cmd"]},
        base,
        {"id": "sink", "path": "sink.py", "env": {"LATENCY_OUT": str(tmp / "lat.json")},
         "inputs": {"cmd": "source/base_cmd", "wheels": "base/wheel_commands"}},
    ]
    yml = tmp / "latency.yml"
    yml.write_text(yaml.safe_dump({"nodes": nodes}, sort_keys=False))
    return yml


def in_process_tick_cost(n: int = 3000) -> list[float]:
    from dora.testing import MockNode

    import pyarrow as pa
    from teledora.nodes.drive import base_sim
    from teledora.operators.contract.messages import encode

    class Timed(MockNode):
        def __init__(self, events):
            super().__init__(events)
            self.t_given = 0.0
            self.costs = []

        def next(self, timeout=None):
            ev = super().next(timeout)
            self.t_given = time.perf_counter()
            return ev

        def drain(self):
            return []

        def send_output(self, output_id, data, metadata=None):
            if output_id == "odom":
                self.costs.append((time.perf_counter() - self.t_given) * 1e3)

    cmd = encode("BaseCommand", {"stamp_ns": 0, "forward_m_s": 0.2, "left_m_s": 0.05, "yaw_rad_s": 0.3})
    tick = pa.array([0], type=pa.uint64())
    events = []
    for k in range(n):
        events.append(("base_cmd", cmd))
        events.append(("tick", tick))
    node = Timed(events)
    base_sim.main([], node=node)
    return node.costs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--tick-ms", type=int, default=10)
    ap.add_argument("--feetech", action="store_true", help="base_feetech on the pty servo emulator")
    args = ap.parse_args()
    costs = in_process_tick_cost()
    print(f"in-process tick (decode+quantize+odometry+encode, sim wheels): median {statistics.median(costs) * 1e3:.0f} us, "
          f"p99 {pct(costs, 0.99) * 1e3:.0f} us")
    dora = shutil.which("dora", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    if dora is None:
        print("dora CLI not found: skipping the dataflow measurement")
        return
    fake = None
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        port = None
        if args.feetech:
            from teledora.fakes.feetech_bus import FakeFeetechBus, FakeServo

            fake = FakeFeetechBus([FakeServo(i) for i in (8, 9, 10)]).__enter__()
            port = fake.port
        yml = dataflow(tmp, args.tick_ms, port)
        env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
        subprocess.run([dora, "run", str(yml), "--stop-after", f"{int(args.seconds * 1000)}ms"], cwd=tmp, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        if fake is not None:
            fake.close()
        lat_file = tmp / "lat.json"
        if not lat_file.exists():
            print("the dataflow produced no measurements (see dora logs)")
            return
        lat = json.loads(lat_file.read_text())
    label = "feetech (pty emulator)" if args.feetech else "sim"
    print(f"command->wheel_commands, {label}, tick {args.tick_ms} ms: median {statistics.median(lat):.2f} ms, "
          f"p99 {pct(lat, 0.99):.2f} ms, max {max(lat):.2f} ms (n={len(lat)}); "
          f"median/tick period = {statistics.median(lat) / args.tick_ms:.2f}")


if __name__ == "__main__":
    main()
