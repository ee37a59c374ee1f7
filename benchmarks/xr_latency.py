"""XR-to-IK latency through dora with the sim running.

Runs the sim dataflow (dataflows/sim.yml: by default its control path xr, teleop,
ik, arms, base, lift and the MuJoCo sim; ``--with-sensing`` keeps the sensing nodes
too) with the ``xr`` node swapped for the UDP feed variant and the recorder
swapped for a probe, streams controller frames at
90 Hz (a hand tracing a slow circle, so every frame changes the arm target) and
measures, per frame:

* xr -> probe: the frame's arrival at the xr node to the probe receiving the
  ``controllers`` message (one dora hop, the reference for the ratios);
* xr -> teleop: from the frame's arrival at the xr node (its receive stamp,
  ``XrControllers.stamp_ns``) to the probe receiving the ``arm_targets`` that
  reflect it (teleop tags them with dora metadata ``xr_stamp_ns``);
* xr -> ik: to the probe receiving the first ``teleop/joint_commands`` solved
  from that report. *traced*: the first command whose metadata ``xr_stamp_ns``
  names the report (the IK runs in teleop's process and tags its commands).
  Two matchings by stamp serve runs whose commands carry no tag: *lower* takes
  the first command solved at or after teleop computed the targets, *upper* the
  first solved after the probe itself received them (with the IK in teleop's
  process the same step's solve goes out before the probe has the targets, so
  *upper* then counts the next tick's solve).

The probe adds one dora hop to every figure, so the numbers are conservative.
``--cost`` instead measures, in one process, the CPU time per frame of the two
pieces this path adds (xr: MAC check + parse + assemble + Arrow array; teleop: read + scheme +
forward kinematics + the four outputs to Arrow), which a busy machine distorts
far less than wall-clock latency.

    python benchmarks/xr_latency.py [--seconds 30] [--rate-hz 90]
    python benchmarks/xr_latency.py --cost [--frames 3000]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
PORT = 9871
TOKEN = "xr-latency-benchmark"
SESSION = os.urandom(8)
NONCE = os.urandom(16)  # cost(): the receiver run the datagrams are sealed for


# ------------------------------------------------------------------- probe node
def probe(out_path: Path) -> None:
    """A dora node recording receive times of controllers, arm_targets and joint_commands."""
    from dora import Node

    node = Node()
    if os.environ.get("XR_LATENCY_PROBE_PRIORITY"):
        # the instrument runs in real time, below the control path: it notes when a
        # message arrives, not when a loaded machine gets round to a normal process
        from teledora.operators.dataflow.node_scheduling import NodeScheduling
        from teledora.runtime.realtime import apply_node_scheduling

        report = apply_node_scheduling(NodeScheduling("fifo", int(os.environ["XR_LATENCY_PROBE_PRIORITY"])), 200.0)
        if report.problem:
            print(f"probe: {report.problem}", flush=True)
    rows = []
    ready = out_path.with_suffix(".ready")
    for event in node:
        if event["type"] != "INPUT":
            continue
        t = time.time_ns()
        eid = event["id"]
        # only the stamp is needed: read that one field (a full decode would slow the probe down)
        row = {"id": eid, "recv_ns": t, "stamp_ns": int(event["value"].field("stamp_ns")[0].as_py())}
        if eid in ("arm_targets", "joint_commands"):
            row["xr_stamp_ns"] = int(event["metadata"].get("xr_stamp_ns", -1))
        if eid == "joint_commands" and not ready.exists():
            ready.write_text("ik is solving")  # the whole loop is up: the benchmark may start
        rows.append(row)
    out_path.write_text("\n".join(json.dumps(r) for r in rows))


# -------------------------------------------------------------------- dataflow
CONTROL_PATH = {"xr", "teleop", "arms", "base", "lift", "sim"}


def build_dataflow(tmp: Path, probe_out: Path, with_sensing: bool) -> Path:
    flow = yaml.safe_load((REPO / "dataflows" / "sim.yml").read_text())
    nodes = []
    for n in flow["nodes"]:
        if n["id"] == "recorder" or (not with_sensing and n["id"] not in CONTROL_PATH):
            continue
        n = dict(n)
        if "path" in n and n["path"].startswith("../"):
            n["path"] = str((REPO / "dataflows" / n["path"]).resolve())
        if n["id"] == "xr":
            n["path"] = str(REPO / "nodes" / "xr" / "xr_udp.py")
            n["args"] = f"--port {PORT} --token {TOKEN}"
        nodes.append(n)
    kept = {n["id"] for n in nodes}
    for n in nodes:  # inputs from dropped nodes (the recorder's heartbeat) go with them
        if n.get("inputs"):
            n["inputs"] = {k: v for k, v in n["inputs"].items()
                           if (v["source"] if isinstance(v, dict) else v).startswith("dora/")
                           or (v["source"] if isinstance(v, dict) else v).split("/")[0] in kept}
            if n.get("input_types"):
                n["input_types"] = {k: v for k, v in n["input_types"].items() if k in n["inputs"]}
    nodes.append({
        "id": "probe",
        "path": str(Path(__file__).resolve()),
        "args": f"--probe {probe_out}",
        "inputs": {
            "controllers": {"source": "xr/controllers", "queue_size": 10000},
            "arm_targets": {"source": "teleop/arm_targets", "queue_size": 10000},
            "joint_commands": {"source": "teleop/joint_commands", "queue_size": 10000},
        },
    })
    # types live next to sim.yml; keep relative type references resolvable
    flow = {k: v for k, v in flow.items() if k != "nodes"}
    flow["nodes"] = nodes
    path = tmp / "xr_latency.yml"
    if (REPO / "dataflows" / "types").exists():
        (tmp / "types").symlink_to(REPO / "dataflows" / "types")
    path.write_text(yaml.safe_dump(flow, sort_keys=False))
    return path


def frame(seq: int, t_ns: int, phase: float) -> bytes:
    pos = [0.35 + 0.05 * math.cos(phase), 0.2 + 0.05 * math.sin(phase), 1.0]
    hand = {"connected": True, "pose_valid": True, "position": pos, "orientation": [0, 0, 0, 1], "stick": [0.0, 0.0]}
    right = dict(hand, position=[0.35, -0.2, 1.0])
    return json.dumps({"version": 1, "session": "bench", "seq": seq, "sent_ns": t_ns, "frame": "flu",
                       "hands": {"left": hand, "right": right}}).encode()


def datagram(seq: int, t_ns: int, phase: float) -> bytes:
    """The frame in the UDP feed's authenticated envelope."""
    from teledora.operators.xr.udp_envelope import feed_key, seal

    return seal(feed_key(TOKEN), NONCE, SESSION, seq, t_ns, frame(seq, t_ns, phase))


def stream(sender, seconds: float, rate_hz: float, first_seq: int = 1) -> int:
    period = 1.0 / rate_hz
    start = time.perf_counter()
    n = 0
    while (elapsed := time.perf_counter() - start) < seconds:
        seq = first_seq + n
        sender.send(frame(seq, time.time_ns(), 2 * math.pi * 0.2 * elapsed), seq)
        n += 1
        delay = start + n * period - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    return n


def analyse(rows: list[dict], start_ns: int) -> dict[str, np.ndarray]:
    ctrl = {r["stamp_ns"]: r for r in rows if r["id"] == "controllers"}
    targets = [r for r in rows if r["id"] == "arm_targets" and r["xr_stamp_ns"] in ctrl]
    cmds = sorted((r for r in rows if r["id"] == "joint_commands"), key=lambda r: r["stamp_ns"])
    cmd_stamps = np.array([c["stamp_ns"] for c in cmds], dtype=np.int64)
    t0 = start_ns
    teleop, lower, upper = [], [], []
    hop = [r["recv_ns"] - s for s, r in ctrl.items() if s >= t0]  # xr -> probe directly: one dora hop
    seen = set()
    for a in targets:
        x = a["xr_stamp_ns"]
        if x in seen or x < t0:
            continue  # tick republishes carry the same report; the first one is the response
        seen.add(x)
        teleop.append(a["recv_ns"] - x)
        for bound, after in ((lower, a["stamp_ns"]), (upper, a["recv_ns"])):
            i = int(np.searchsorted(cmd_stamps, after, side="left"))
            if i < len(cmds):
                bound.append(cmds[i]["recv_ns"] - x)
    # the first joint command that names the report (teleop's IK tags its commands
    # with the report behind their targets): no matching needed
    traced: dict[int, int] = {}
    for c in cmds:
        x = c.get("xr_stamp_ns", -1)
        if x in ctrl and x >= t0 and x not in traced:
            traced[x] = c["recv_ns"] - x
    return {k: np.array(v) / 1e6 for k, v in
            (("xr->probe", hop), ("xr->teleop", teleop), ("xr->ik lower", lower), ("xr->ik upper", upper),
             ("xr->ik traced", list(traced.values())))}


def cost(frames: int) -> None:
    from dora.testing import MockNode

    from teledora import models
    from teledora.runtime.node_io import NodeIO
    from teledora.nodes.teleop.teleop import _OUTPUTS as teleop_outputs
    from teledora.nodes.teleop.teleop import RobotGrips
    from teledora.operators.contract.messages import encode
    from teledora.operators.teleop.teleop_scheme import TeleopScheme
    from teledora.operators.xr.feed_assembler import FeedAssembler
    from teledora.operators.xr.headset_clock import HOST_CLOCK
    from teledora.operators.xr.udp_envelope import EnvelopeOpener, feed_key
    from teledora.operators.xr.xr_feed_format import parse_frame

    from teledora.models.config_files import load_teleop_config

    profile = models.load_profile()
    assembler, scheme = FeedAssembler("bench"), TeleopScheme(load_teleop_config(profile=profile))
    opener = EnvelopeOpener(feed_key(TOKEN), NONCE)
    kin = RobotGrips(models.path(profile.model), profile)
    names = list(kin.profile.arm_joint_names)
    kin.set_joints(names, np.zeros(len(names)))
    kin.set_lift_height(0.3)
    io = NodeIO(MockNode([]), "bench")
    io.node.send_output = lambda *a, **k: None  # measure the node's work, not the mock's bookkeeping
    xr_cpu, teleop_cpu, xr_wall, teleop_wall = [], [], [], []
    for i in range(frames):
        now = time.time_ns()
        data = datagram(i + 1, now, 2 * math.pi * i / 450)
        c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
        msg = assembler.assemble(parse_frame(opener.open(data, now).payload), now, HOST_CLOCK)
        value = encode("XrControllers", msg)
        c1, w1 = time.thread_time_ns(), time.perf_counter_ns()
        scheme.on_controllers(io.decode({"id": "controllers", "value": value}, "XrControllers"), now)
        kin.set_joints(names, np.full(len(names), 1e-3 * (i % 7)))  # force FK every frame
        out = scheme.step(now, kin.grips())
        for output, kind in teleop_outputs:
            io.send(output, kind, getattr(out, output), {})
        c2, w2 = time.thread_time_ns(), time.perf_counter_ns()
        xr_cpu.append(c1 - c0)
        teleop_cpu.append(c2 - c1)
        xr_wall.append(w1 - w0)
        teleop_wall.append(w2 - w1)
    print(f"per-frame cost over {frames} frames ({os.cpu_count()} CPUs)")
    print(f"{'piece':<18} {'cpu median us':>14} {'cpu p99 us':>11} {'wall median us':>15} {'wall p99 us':>12}")
    for name, cpu, wall in (("xr (udp/webxr)", xr_cpu, xr_wall), ("teleop", teleop_cpu, teleop_wall)):
        c, w = np.array(cpu) / 1e3, np.array(wall) / 1e3
        print(f"{name:<18} {np.median(c):>14.0f} {np.percentile(c, 99):>11.0f} {np.median(w):>15.0f} {np.percentile(w, 99):>12.0f}")
    share = (np.median(xr_cpu) + np.median(teleop_cpu)) * 90 / 1e9
    print(f"CPU share of one core at 90 Hz (both pieces, median): {100 * share:.1f} %")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--rate-hz", type=float, default=90.0)
    ap.add_argument("--probe", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--with-sensing", action="store_true",
                    help="keep the sensing nodes of sim.yml (lidars, flow, ekf, mocap, renderer) running too")
    ap.add_argument("--cost", action="store_true", help="per-frame CPU cost in one process (no dora)")
    ap.add_argument("--frames", type=int, default=3000)
    args = ap.parse_args(argv)
    if args.probe is not None:
        probe(args.probe)
        return 0
    if args.cost:
        cost(args.frames)
        return 0
    from teledora.commands.demo import dora_environment

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        out = tmp / "probe.jsonl"
        flow = build_dataflow(tmp, out, args.with_sensing)
        env = dora_environment(tmp / "run")
        dora = Path(sys.executable).parent / "dora"
        log_path = tmp / "dora.log"
        with log_path.open("w") as log_file:
            proc = subprocess.Popen([str(dora), "run", str(flow)], env=env, cwd=tmp, stdout=log_file,
                                    stderr=subprocess.STDOUT, text=True)
            # warm up at 10 Hz until the probe sees the IK solving (nodes started, sim and IK initialised)
            deadline, seq = time.monotonic() + 180, 0
            from teledora.devices.xr.udp_feed import PairingFailed, UdpFeedSender

            sender = UdpFeedSender("127.0.0.1", PORT, TOKEN, pair_timeout_s=0.2)
            sender.connect()
            while not out.with_suffix(".ready").exists() and time.monotonic() < deadline and proc.poll() is None:
                seq += 1
                try:
                    sender.send(frame(seq, time.time_ns(), 0.0), seq)
                except PairingFailed:  # the node is not listening yet
                    pass
                time.sleep(0.1)
            time.sleep(1.0)
            start_ns = time.time_ns()
            sent = stream(sender, args.seconds, args.rate_hz, first_seq=seq + 1)
            sender.close()
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)  # dora stops the dataflow; the probe writes its rows
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        log = log_path.read_text()
        if not out.exists():
            print(log[-4000:])
            print("probe wrote nothing: the dataflow did not run", file=sys.stderr)
            return 1
        rows = [json.loads(line) for line in out.read_text().splitlines() if line]
    res = analyse(rows, start_ns)
    n_ctrl = sum(r["id"] == "controllers" and r["stamp_ns"] >= start_ns for r in rows)
    print(f"xr latency through dora, sim running{' with sensing' if args.with_sensing else ''}: {sent} frames sent at {args.rate_hz:.0f} Hz, "
          f"{n_ctrl} published by xr ({os.cpu_count()} CPUs)")
    print(f"{'path':<14} {'n':>6} {'median ms':>10} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for name, v in res.items():
        if len(v) == 0:
            print(f"{name:<14} {0:>6}")
            continue
        print(f"{name:<14} {len(v):>6} {np.median(v):>10.2f} {np.percentile(v, 90):>8.2f} {np.percentile(v, 99):>8.2f} {v.max():>8.2f}")
    if len(res["xr->probe"]) and len(res["xr->teleop"]) and len(res["xr->ik upper"]):
        base = np.median(res["xr->probe"])
        print(f"medians relative to one dora hop (xr->probe): teleop path {np.median(res['xr->teleop']) / base:.1f}x, "
              f"ik path (upper) {np.median(res['xr->ik upper']) / base:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
