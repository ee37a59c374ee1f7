"""Where the CPU and memory of the full sim dataflow go, per node, side by side with a bare echo node.

Runs dataflows/sim.yml the way ``teledora demo`` does (``dora run`` with the
demo environment, the scripted operator's fixed demo script, every node and the
recorder) with two nodes added:

* ``echo``: a bare dora node (no teledora runtime) that receives
  ``xr/controllers`` (a small struct at 90 Hz) and sends it on unchanged: the
  floor of what handling one message costs a Python dora node here;
* ``probe``: the latency probe of benchmarks/xr_latency.py (receive times of
  ``xr/controllers``, ``teleop/arm_targets`` and ``teleop/joint_commands``).

While the dataflow runs, the benchmark samples ``/proc/<pid>/stat`` (user +
system CPU) and ``/proc/<pid>/status`` (VmHWM, peak resident set) of every
process below ``dora run`` every 0.2 s, naming each by the ``node_id`` in its
``DORA_NODE_CONFIG`` (the rest is ``dora`` itself: daemon and coordinator).
CPU is counted over the steady window from 2 s after the first XR report to
the last one (imports and model loading excluded); message counts over the same
window come from the recording (every output's receive times at the recorder)
plus the nodes' timer ticks.

Per node it prints CPU seconds per second of robot time (cores), messages in
(data inputs + timer ticks) and out, CPU per message in and the ratio of that
to the echo node's, peak RSS and PSS; then totals (with the dataflow's peak
PSS at one instant: all its processes summed in one sampling round), xr ->
teleop / xr -> ik latency from the probe, and the load average at start and
end (the machine may be shared: compare ratios, not absolute figures, across
runs).

    python benchmarks/stack_cpu.py [--json out.json] [--keep-run DIR]
    python benchmarks/stack_cpu.py --node-env ekf:TELEDORA_BATCH_SPACING_S=0   # one node's env changed for a
                                                    # variant (repeatable; alternate the variants' runs)
    python benchmarks/stack_cpu.py --control-only   # xr, teleop (+IK), arms, base, lift, sim (+ echo, probe, and a
                                                    # counter node standing in for the recorder's message counts)
    python benchmarks/stack_cpu.py --soak-min 30    # the demo script played over and over for 30 minutes: resident
                                                    # memory per node at the start and the end of the window, messages
                                                    # lost (the recording's sequence numbers and counter gaps), and each
                                                    # periodic topic's rate in the window's first and last fifth
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = 1
CONTROL = ("teleop", "arms", "base", "lift")
CONTROL_PATH = {"xr", "teleop", "arms", "base", "lift", "sim"}
ECHO_INPUT = "xr/controllers"
EXTRA_NODES = ("echo", "probe", "counter")  # the benchmark's own nodes, left out of the dataflow's totals


# ------------------------------------------------------------------ echo node
def echo() -> None:
    """Receives a small struct and sends it on: nothing else."""
    from dora import Node

    node = Node()
    for event in node:
        if event["type"] == "INPUT":
            node.send_output("out", event["value"], event["metadata"])


def count(out_path: Path) -> None:
    """Receive times per input, nothing else (message counts without the recorder)."""
    from dora import Node

    seen: dict[str, list[int]] = {}
    for event in Node():
        if event["type"] == "INPUT":
            seen.setdefault(event["id"], []).append(time.time_ns())
    out_path.write_text(json.dumps(seen))


# ------------------------------------------------------------------ dataflow
def parse_node_env(items: list[str], node_ids: set[str]) -> dict[str, dict[str, str]]:
    """``NODE:KEY=VALUE`` settings, per node id.

    Raises:
        ValueError: a malformed item or a node the dataflow does not have.
    """
    out: dict[str, dict[str, str]] = {}
    for item in items:
        match = re.fullmatch(r"([A-Za-z0-9_-]+):([A-Za-z_][A-Za-z0-9_]*)=(.*)", item)
        if match is None:
            raise ValueError(f"--node-env takes NODE:KEY=VALUE, got {item!r}")
        node, key, value = match.groups()
        if node not in node_ids:
            raise ValueError(f"--node-env: no node {node!r} in the dataflow (nodes: {', '.join(sorted(node_ids))})")
        out.setdefault(node, {})[key] = value
    return out


def build_dataflow(tmp: Path, probe_out: Path, control_only: bool,
                   node_env: list[str] | None = None) -> tuple[Path, dict]:
    flow = yaml.safe_load((REPO / "dataflows" / "sim.yml").read_text())
    overrides = parse_node_env(node_env or [], {n["id"] for n in flow["nodes"]})
    nodes = []
    for n in flow["nodes"]:
        if control_only and n["id"] not in CONTROL_PATH:
            continue
        n = dict(n)
        if n["id"] in overrides:
            n["env"] = {**(n.get("env") or {}), **overrides[n["id"]]}
        if "path" in n and n["path"].startswith("../"):
            n["path"] = str((REPO / "dataflows" / n["path"]).resolve())
        nodes.append(n)
    kept = {n["id"] for n in nodes}
    for n in nodes:  # inputs from dropped nodes (the recorder's heartbeat) go with them
        if n.get("inputs"):
            n["inputs"] = {k: v for k, v in n["inputs"].items()
                           if _source(v).startswith("dora/") or _source(v).split("/")[0] in kept}
            if n.get("input_types"):
                n["input_types"] = {k: v for k, v in n["input_types"].items() if k in n["inputs"]}
        waits = (n.get("env") or {}).get("TELEDORA_XR_WAIT_FOR")
        if waits:  # the scripted operator waits only for inputs that are still wired
            n["env"] = dict(n["env"], TELEDORA_XR_WAIT_FOR=",".join(i for i in waits.split(",") if i in (n.get("inputs") or {})))
    here = str(Path(__file__).resolve())
    nodes.append({"id": "echo", "path": here, "args": "--echo", "inputs": {"in": ECHO_INPUT}, "outputs": ["out"]})
    nodes.append({
        "id": "probe",
        "path": str(REPO / "benchmarks" / "xr_latency.py"),
        "args": f"--probe {probe_out}",
        "env": {"XR_LATENCY_PROBE_PRIORITY": "60"},  # the instrument in real time (below the control path), in every variant
        "inputs": {
            "controllers": {"source": "xr/controllers", "queue_size": 10000},
            "arm_targets": {"source": "teleop/arm_targets", "queue_size": 10000},
            "joint_commands": {"source": "teleop/joint_commands", "queue_size": 10000},
            "echo": {"source": "echo/out", "queue_size": 10000},
        },
    })
    if control_only:  # no recorder to count messages: a counter node takes every output of the control path
        nodes.append({"id": "counter", "path": here, "args": f"--count {probe_out.with_suffix('.counts')}", "inputs": {
            f"{n['id']}__{o}": {"source": f"{n['id']}/{o}", "queue_size": 10000} for n in nodes[:-2] for o in n.get("outputs", [])}})
    flow = {k: v for k, v in flow.items() if k != "nodes"}
    flow["nodes"] = nodes
    path = tmp / "stack_cpu.yml"
    if (REPO / "dataflows" / "types").exists():
        (tmp / "types").symlink_to(REPO / "dataflows" / "types")
    path.write_text(yaml.safe_dump(flow, sort_keys=False))
    return path, flow


# ------------------------------------------------------------------ sampling
def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            try:
                out += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
            except OSError:
                pass
    except OSError:
        pass
    return out


def _descendants(root: int) -> list[int]:
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo += _children(pid)
    return seen


def _node_name(pid: int) -> str | None:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return None
    for item in env:
        if item.startswith(b"DORA_NODE_CONFIG="):
            m = re.search(rb"^node_id: *(\S+)", item, re.MULTILINE)
            if m:
                return m.group(1).decode()
    return None


def _cpu_s(pid: int) -> float | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime


def _pss_kb(pid: int) -> int:
    """Proportional set size: resident pages, each shared page split among its sharers."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _hwm_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class Sampler(threading.Thread):
    """Every ``period_s``: cumulative CPU of each process under ``root``, and peak RSS."""

    def __init__(self, root: int, period_s: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.root, self.period_s = root, period_s
        self.names: dict[int, str] = {}
        self.series: dict[int, list[tuple[int, float]]] = {}
        self.hwm_kb: dict[int, int] = {}
        self.pss_kb: dict[int, int] = {}
        self.rss: dict[int, list[tuple[int, int]]] = {}  # resident set over time, once a second (soak growth)
        # the dataflow's PSS at one instant (summed over its processes in one
        # sampling round, the benchmark's own nodes left out): its peak is the
        # memory the dataflow took at once, which the sum of per-process peaks
        # overstates when processes peak at different times or end early
        self.pss_sum_peak_kb = 0
        self.stopped = threading.Event()

    def run(self) -> None:
        k = 0
        while not self.stopped.is_set():
            now = time.time_ns()
            k += 1
            round_pss_kb = 0
            for pid in _descendants(self.root):
                if self.names.get(pid, "dora") == "dora":  # a fresh fork is named by its exec'd node later
                    name = _node_name(pid)
                    if name is None:
                        try:
                            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2]
                        except OSError:
                            continue
                        # the dora CLI is a Python entry script: argv is [python, .../dora, run, ...]
                        if not any(a.endswith(b"dora") for a in argv):
                            continue  # a shell or helper between dora and a node: not counted
                        name = "dora"
                    self.names[pid] = name
                cpu = _cpu_s(pid)
                if cpu is None:
                    continue
                self.series.setdefault(pid, []).append((now, cpu))
                self.hwm_kb[pid] = max(self.hwm_kb.get(pid, 0), _hwm_kb(pid))
                if k % 5 == 0:  # smaps_rollup walks the whole address space: once a second
                    self.rss.setdefault(pid, []).append((now, _rss_kb(pid)))
                    pss = _pss_kb(pid)
                    self.pss_kb[pid] = max(self.pss_kb.get(pid, 0), pss)
                    if self.names[pid] not in EXTRA_NODES:
                        round_pss_kb += pss
            self.pss_sum_peak_kb = max(self.pss_sum_peak_kb, round_pss_kb)
            self.stopped.wait(self.period_s)

    def cpu_between(self, pid: int, t0: int, t1: int) -> float:
        s = self.series.get(pid, [])
        if not s:
            return 0.0
        ts = np.array([p[0] for p in s], dtype=np.float64)
        cs = np.array([p[1] for p in s])
        return float(np.interp(t1, ts, cs) - np.interp(t0, ts, cs))


# ------------------------------------------------------------------ analysis
def _schedule_dora_when_started(proc: subprocess.Popen, log_path: Path, scheduling_file: Path) -> None:
    from teledora.models.config_files import load_scheduling_config
    from teledora.runtime.realtime import schedule_process

    while proc.poll() is None:
        if "all nodes are ready" in log_path.read_text(errors="replace"):
            table = load_scheduling_config(scheduling_file)
            report = schedule_process(proc.pid, table.for_daemon() if table else None)
            print(f"dora's process: {report.applied}" + (f" ({report.problem})" if report.problem else ""), flush=True)
            return
        time.sleep(0.2)


def _holds(run_dir: Path) -> dict[str, int]:
    """Stale-input holds over the run: the base and lift watchdog trips and the
    safe stops of the recorder guard, from each node's last diagnostics."""
    from teledora.operators.contract.messages import decode
    from teledora.recording.run_reader import RunReader

    reader = RunReader(run_dir)
    out: dict[str, int] = {}
    for topic, (node, output) in reader.sources().items():
        if output != "diagnostics" or node not in ("base", "lift", "arms", "teleop"):
            continue
        last = None
        for msg in reader.iter_topic(topic):
            last = msg
        if last is None:
            continue
        details = json.loads(decode("Diagnostics", last.value)["details_json"])
        if "watchdog_trips" in details:
            out[f"{node} watchdog trips"] = int(details["watchdog_trips"])
    return out


def _recorded_counts(run_dir: Path, t0: int, t1: int) -> dict[str, int]:
    from teledora.recording.run_reader import RunReader

    reader = RunReader(run_dir)
    counts = {}
    sources = reader.sources()
    for topic in reader.topics:
        table = reader.read_topic(topic).table
        # dora's send stamp where recorded (a lagging recorder would shift receive times), else the receive time
        sent = table.column("dora_ns").to_numpy(zero_copy_only=False) if table.num_rows else np.array([])
        recv = table.column("recv_ns").to_numpy(zero_copy_only=False) if table.num_rows else np.array([])
        t = np.where(np.isnan(sent.astype(np.float64)), recv, sent).astype(np.int64) if len(sent) else recv
        counts["/".join(sources[topic])] = int(((t >= t0) & (t < t1)).sum())
    return counts


def rss_growth(series: list[tuple[int, int]], t_start: int, t_end: int) -> tuple[float, float] | None:
    """A process's resident set (MB) at the first sample from ``t_start`` and
    at the last one up to ``t_end``; None when it has none in that span."""
    inside = [(t, kb) for t, kb in series if t_start <= t <= t_end]
    if len(inside) < 2:
        return None
    return inside[0][1] / 1024, inside[-1][1] / 1024


def rate_drift(times_by_topic: dict[str, np.ndarray], t0: int, t1: int, min_hz: float = 1.0) -> dict[str, tuple[float, float]]:
    """Each topic's rate (Hz) over the first and the last fifth of [t0, t1),
    for topics at ``min_hz`` or more over the window (event topics excluded)."""
    fifth = (t1 - t0) // 5
    out = {}
    for topic, t in times_by_topic.items():
        n = int(((t >= t0) & (t < t1)).sum())
        if n / ((t1 - t0) / 1e9) < min_hz:
            continue
        first = int(((t >= t0) & (t < t0 + fifth)).sum()) / (fifth / 1e9)
        last = int(((t >= t1 - fifth) & (t < t1)).sum()) / (fifth / 1e9)
        out[topic] = (first, last)
    return out


def _send_times(run_dir: Path) -> dict[str, np.ndarray]:
    """Every recorded topic's send times (dora's stamp, else the receive time), by ``node/output``."""
    from teledora.recording.run_reader import RunReader

    reader = RunReader(run_dir)
    sources = reader.sources()
    out = {}
    for topic in reader.topics:
        table = reader.read_topic(topic).table
        if not table.num_rows:
            continue
        sent = table.column("dora_ns").to_numpy(zero_copy_only=False).astype(np.float64)
        recv = table.column("recv_ns").to_numpy(zero_copy_only=False)
        out["/".join(sources[topic])] = np.where(np.isnan(sent), recv, sent).astype(np.int64)
    return out


def soak_report(sampler: "Sampler", run_dir: Path, t0: int, t1: int, warmup_s: float) -> dict:
    """What a long run says about memory, loss and rates (see the module's notes); prints it too."""
    from teledora.commands.log import summarize
    from teledora.recording.run_reader import RunReader

    t_mem = t0 + int(warmup_s * 1e9)  # imports, model loading and first allocations done
    print(f"soak: memory from {warmup_s:.0f} s into the window to its end; rates in its first and last fifth")
    print(f"{'node':<14} {'RSS start MB':>12} {'RSS end MB':>11} {'growth':>8}")
    report: dict = {"rss": {}, "rates": {}}
    for name in sorted(set(sampler.names.values()) - set(EXTRA_NODES)):
        start = end = 0.0
        for pid, n in sampler.names.items():
            if n == name and (g := rss_growth(sampler.rss.get(pid, []), t_mem, t1)) is not None:
                start, end = start + g[0], end + g[1]
        if start:
            growth = (end - start) / start * 100
            print(f"{name:<14} {start:>12.0f} {end:>11.0f} {growth:>7.1f}%")
            report["rss"][name] = {"start_mb": start, "end_mb": end, "growth_pct": growth}
    s = summarize(RunReader(run_dir))
    counter_gaps = sum(t["gaps"].get("counter", 0) for t in s["topics"].values())
    print(f"messages recorded {s['messages']}, missing sequence numbers {s['seq_missing']}, counter gaps {counter_gaps}, "
          f"recorder rejects {sum(s['rejected'].values()) if s['rejected'] else 0}")
    report.update(messages=s["messages"], seq_missing=s["seq_missing"], counter_gaps=counter_gaps)
    drift = rate_drift(_send_times(run_dir), t0, t1)
    worst = sorted(drift.items(), key=lambda kv: -abs(kv[1][1] - kv[1][0]) / max(kv[1][0], 1e-9))
    print(f"{'topic':<28} {'first Hz':>9} {'last Hz':>8} {'change':>7}")
    for topic, (first, last) in worst:
        change = (last - first) / first * 100 if first else float("nan")
        print(f"{topic:<28} {first:>9.1f} {last:>8.1f} {change:>6.1f}%")
        report["rates"][topic] = {"first_hz": first, "last_hz": last}
    return report


def _source(spec) -> str:
    return spec["source"] if isinstance(spec, dict) else str(spec)


def message_counts(flow: dict, topic_counts: dict[str, int], probe_counts: dict[str, int], window_s: float) -> dict[str, tuple[int, int]]:
    """(in, out) per node over the window: data inputs and ticks in, outputs out (diagnostics included)."""
    counts = dict(topic_counts)
    counts.update(probe_counts)
    out = {}
    for n in flow["nodes"]:
        if n["id"] in ("probe", "counter"):
            continue
        msgs_in = 0
        for spec in (n.get("inputs") or {}).values():
            src = _source(spec)
            if src.startswith("dora/timer/millis/"):
                msgs_in += int(window_s * 1000 / int(src.rsplit("/", 1)[1]))
            else:
                msgs_in += counts.get(src, 0)
        msgs_out = sum(counts.get(f"{n['id']}/{o}", 0) for o in n.get("outputs", []))
        out[n["id"]] = (msgs_in, msgs_out)
    return out


def command_counts(flow: dict, topic_counts: dict[str, int], probe_counts: dict[str, int]) -> dict[str, tuple[str, int, int]]:
    """Per node with a command input (its ``TELEDORA_ENDS_WITH``, the echo's ``in``):
    (that input's source, messages on it, messages on the node's first output)."""
    counts = dict(topic_counts)
    counts.update(probe_counts)
    out = {}
    for n in flow["nodes"]:
        inputs = n.get("inputs") or {}
        name = (n.get("env") or {}).get("TELEDORA_ENDS_WITH", "in" if n["id"] == "echo" else "").split(",")[0]
        if name not in inputs or not n.get("outputs"):
            continue
        src = _source(inputs[name])
        out[n["id"]] = (src, counts.get(src, 0), counts.get(f"{n['id']}/{n['outputs'][0]}", 0))
    return out


def _loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--echo", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--count", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--control-only", action="store_true", help="only the control path (xr, teleop with the IK, arms, base, lift, sim)")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    ap.add_argument("--keep-run", type=Path, default=None, help="copy the recording here")
    ap.add_argument("--timeout-s", type=float, default=240.0)
    ap.add_argument("--node-env", action="append", default=[], metavar="NODE:KEY=VALUE",
                    help="set an env variable of one node of the dataflow (repeatable), to measure a variant")
    ap.add_argument("--stress", type=int, default=0, metavar="N",
                    help="run `stress-ng --cpu N` beside the dataflow for the whole run (a load that hogs N cores)")
    ap.add_argument("--realtime", action="store_true",
                    help="run scheduling.yaml's table enabled (the control path and dora's process in real time), "
                         "to compare with time-sharing, the shipped default")
    ap.add_argument("--soak-min", type=float, default=0.0, metavar="M",
                    help="play the demo script over and over for M minutes and report memory growth, loss and rate drift")
    ap.add_argument("--warmup-s", type=float, default=60.0, help="with --soak-min: memory growth counted from this far in")
    args = ap.parse_args(argv)
    if args.soak_min:
        args.timeout_s = args.soak_min * 60 + 60  # the dataflow's start and the script's wait for the robot
        args.node_env.append("xr:TELEDORA_XR_REPEAT=1")
    if args.echo:
        echo()
        return 0
    if args.count is not None:
        count(args.count)
        return 0
    sys.path.insert(0, str(REPO / "benchmarks"))
    from xr_latency import analyse

    from teledora.commands.demo import dora_environment

    scheduling_file = None
    if args.realtime:  # the shipped table, enabled, for the control path's nodes and dora's process
        from teledora.models.config_files import SCHEDULING, read_config_file

        scheduling_file = Path(tempfile.mkdtemp()) / "scheduling.yaml"
        scheduling_file.write_text(json.dumps({**read_config_file(SCHEDULING)[1], "enabled": True}))
        args.node_env += [f"{n}:TELEDORA_SCHEDULING={scheduling_file}" for n in ("xr",) + CONTROL]
    stress_bin = shutil.which("stress-ng")
    if args.stress and stress_bin is None:
        ap.error("--stress needs stress-ng (Debian package stress-ng)")
    load_start = _loadavg()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        probe_out = tmp / "probe.jsonl"
        try:
            flow_path, flow = build_dataflow(tmp, probe_out, args.control_only, args.node_env)
        except ValueError as exc:
            ap.error(str(exc))
        run_dir = tmp / "run"
        env = dora_environment(run_dir)
        dora = Path(sys.executable).parent / "dora"
        log_path = tmp / "dora.log"
        wall0 = time.monotonic()
        with log_path.open("w") as log_file:
            proc = subprocess.Popen([str(dora), "run", str(flow_path), "--stop-after", f"{int(args.timeout_s)}s"], env=env,
                                    cwd=REPO, stdout=log_file, stderr=subprocess.STDOUT)
            sampler = Sampler(proc.pid)
            sampler.start()
            if scheduling_file is not None:  # as `teledora run` does: dora's process above the nodes it routes for
                threading.Thread(target=_schedule_dora_when_started, args=(proc, log_path, scheduling_file),
                                 daemon=True).start()
            stress = None
            if args.stress:  # bounded: it ends by itself at the run's limit, and is ended with the run
                stress = subprocess.Popen([stress_bin, "--cpu", str(args.stress), "--timeout", f"{int(args.timeout_s) + 30}s", "--quiet"])
            try:
                proc.wait()
            finally:
                if stress is not None:
                    stress.terminate()
                    stress.wait()
            sampler.stopped.set()
            sampler.join()
        wall = time.monotonic() - wall0
        if not probe_out.exists():
            print(log_path.read_text()[-4000:])
            print("probe wrote nothing: the dataflow did not run", file=sys.stderr)
            return 1
        rows = [json.loads(line) for line in probe_out.read_text().splitlines() if line]
        ctrl = sorted(r["recv_ns"] for r in rows if r["id"] == "controllers")
        t0, t1 = ctrl[0] + 2_000_000_000, ctrl[-1]
        window_s = (t1 - t0) / 1e9
        probe_counts = {"echo/out": sum(1 for r in rows if r["id"] == "echo" and t0 <= r["recv_ns"] < t1)}
        topic_counts = _recorded_counts(run_dir, t0, t1) if run_dir.exists() else {}
        counts_path = probe_out.with_suffix(".counts")
        if not topic_counts and counts_path.exists():  # control only: the counter node's receive times
            for input_id, stamps in json.loads(counts_path.read_text()).items():
                topic_counts[input_id.replace("__", "/", 1)] = sum(1 for t in stamps if t0 <= t < t1)
        holds = _holds(run_dir) if run_dir.exists() else {}
        soak = soak_report(sampler, run_dir, t0, t1, args.warmup_s) if args.soak_min and run_dir.exists() else None
        if args.keep_run and run_dir.exists():
            shutil.copytree(run_dir, args.keep_run)
    load_end = _loadavg()

    per_node: dict[str, dict] = {}
    for pid, name in sampler.names.items():
        row = per_node.setdefault(name, {"cpu_s": 0.0, "hwm_kb": 0, "pss_kb": 0, "procs": 0})
        row["cpu_s"] += sampler.cpu_between(pid, t0, t1)
        row["hwm_kb"] += sampler.hwm_kb.get(pid, 0)
        row["pss_kb"] += sampler.pss_kb.get(pid, 0)
        row["procs"] += 1
    counts = message_counts(flow, topic_counts, probe_counts, window_s)
    # a node that ended before the window (the renderer with no window and no
    # cameras) was delivered nothing in it, whatever its inputs' topics carried
    last_seen: dict[str, int] = {}
    for pid, name in sampler.names.items():
        if sampler.series.get(pid):
            last_seen[name] = max(last_seen.get(name, 0), sampler.series[pid][-1][0])
    ended = sorted(n for n, t in last_seen.items() if t < t0 and n in counts)
    for name in ended:
        counts[name] = (0, counts[name][1])
    commands = command_counts(flow, topic_counts, probe_counts)
    echo_per = None
    if "echo" in per_node and counts.get("echo", (0, 0))[0]:
        echo_per = per_node["echo"]["cpu_s"] / counts["echo"][0]
    order = sorted(per_node, key=lambda n: -per_node[n]["cpu_s"])
    print(f"stack_cpu: {'control path' if args.control_only else 'full sim dataflow'}, window {window_s:.1f} s of robot time "
          f"({wall:.0f} s wall in all), {os.cpu_count()} CPUs, load average at start {load_start}, at end {load_end}")
    if args.node_env:
        print(f"node env changed: {', '.join(args.node_env)}")
    if args.stress:
        print(f"beside it: stress-ng --cpu {args.stress} for the whole run")
    print(f"{'node':<14} {'cores':>6} {'in':>6} {'out':>6} {'in Hz':>6} {'out Hz':>6} {'ms/msg in':>9} {'x echo':>7} {'ms/out':>7} {'peak RSS MB':>11} {'peak PSS MB':>11}")
    report = {"window_s": window_s, "load_start": load_start, "load_end": load_end, "cpus": os.cpu_count(), "nodes": {}}
    for name in order:
        r = per_node[name]
        n_in, n_out = counts.get(name, (0, 0))
        per = r["cpu_s"] / n_in if n_in else None
        ratio = per / echo_per if per is not None and echo_per else None
        print(f"{name:<14} {r['cpu_s'] / window_s:>6.3f} {n_in:>6} {n_out:>6} {n_in / window_s:>6.1f} {n_out / window_s:>6.1f} "
              f"{(per * 1e3 if per is not None else float('nan')):>9.3f} {(ratio if ratio is not None else float('nan')):>7.1f} "
              f"{(r['cpu_s'] / n_out * 1e3 if n_out else float('nan')):>7.3f} {r['hwm_kb'] / 1024:>11.0f} {r['pss_kb'] / 1024:>11.0f}")
        report["nodes"][name] = {"cores": r["cpu_s"] / window_s, "in": n_in, "out": n_out, "ms_per_msg_in": per * 1e3 if per else None,
                                 "x_echo": ratio, "peak_rss_mb": r["hwm_kb"] / 1024,
                                 "peak_pss_mb": r["pss_kb"] / 1024}
    if ended:
        print(f"ended before the window (nothing delivered to them in it): {', '.join(ended)}")
    report["ended_before_window"] = ended
    extra = EXTRA_NODES
    total_cpu = sum(r["cpu_s"] for n, r in per_node.items() if n not in extra)
    total_rss = sum(r["hwm_kb"] for n, r in per_node.items() if n not in extra) / 1024
    total_pss = sum(r["pss_kb"] for n, r in per_node.items() if n not in extra) / 1024
    print(f"total (without echo, probe and counter): {total_cpu / window_s:.2f} cores on average; summed over processes: peak RSS "
          f"{total_rss:.0f} MB (shared library pages counted in every process), peak PSS {total_pss:.0f} MB (shared pages split)")
    pss_at_once = sampler.pss_sum_peak_kb / 1024
    print(f"peak PSS of the dataflow at one instant (all its processes summed in one sampling round, once a second): {pss_at_once:.0f} MB")
    report.update(total_cores=total_cpu / window_s, total_peak_rss_mb=total_rss, total_peak_pss_mb=total_pss,
                  peak_pss_at_once_mb=pss_at_once)
    if echo_per:
        worst = max((per_node[n]["cpu_s"] / counts[n][0] / echo_per, n) for n in CONTROL if n in per_node and counts.get(n, (0, 0))[0])
        print(f"echo floor {echo_per * 1e3:.3f} ms CPU per message; worst control node per message in {worst[1]} at {worst[0]:.1f}x")
        print("per command (all of a node's CPU over the messages on its command input; ratio to the echo's per message):")
        print(f"  {'node':<10} {'command input':<22} {'cmd Hz':>7} {'out Hz':>7} {'ms/cmd':>7} {'x echo':>7}")
        report["per_command"] = {}
        for name in ("echo",) + CONTROL:
            if name not in commands or name not in per_node or not commands[name][1]:
                continue
            src, n_cmd, n_first = commands[name]
            per_cmd = per_node[name]["cpu_s"] / n_cmd
            print(f"  {name:<10} {src:<22} {n_cmd / window_s:>7.1f} {n_first / window_s:>7.1f} {per_cmd * 1e3:>7.3f} {per_cmd / echo_per:>7.1f}")
            report["per_command"][name] = {"input": src, "cmd_hz": n_cmd / window_s, "first_out_hz": n_first / window_s,
                                           "ms_per_cmd": per_cmd * 1e3, "x_echo": per_cmd / echo_per}
    xr_in = counts.get("teleop", (0, 0))
    n_ctrl = topic_counts.get("xr/controllers", 0)
    n_targets = topic_counts.get("teleop/arm_targets", 0)
    n_cmds = topic_counts.get("teleop/joint_commands", 0)
    print(f"rates over the window: xr/controllers {n_ctrl / window_s:.1f} Hz, teleop/arm_targets {n_targets / window_s:.1f} Hz, "
          f"teleop/joint_commands {n_cmds / window_s:.1f} Hz")
    for cam in ("chest", "top_front", "top_back", "left_wrist", "right_wrist"):
        if f"cameras/{cam}" in topic_counts and topic_counts[f"cameras/{cam}"]:
            print(f"  cameras/{cam}: {topic_counts[f'cameras/{cam}'] / window_s:.1f} Hz")
    del xr_in
    lat = analyse([r for r in rows if r["id"] != "echo"], t0)
    print(f"{'latency':<14} {'n':>6} {'median ms':>10} {'p90 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    report["latency_ms"] = {}
    for name, v in lat.items():
        if len(v) == 0:
            continue
        print(f"{name:<14} {len(v):>6} {np.median(v):>10.2f} {np.percentile(v, 90):>8.2f} {np.percentile(v, 99):>8.2f} {v.max():>8.2f}")
        report["latency_ms"][name] = {"p50": float(np.median(v)), "p99": float(np.percentile(v, 99))}
    if holds:
        print("holds taken by the actuators and the IK (from their last diagnostics): "
              + ", ".join(f"{k} {v}" for k, v in sorted(holds.items())))
    report["holds"] = holds
    if soak is not None:
        report["soak"] = soak
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
