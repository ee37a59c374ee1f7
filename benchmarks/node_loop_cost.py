"""CPU per message of the control nodes' own loops, without dora: teleop (with the IK) and arms in one process.

Feeds each node's ``main`` a ``dora.testing.MockNode`` holding a synthetic run
on a simulated clock: the demo script's XR reports at 90 Hz, arm joint states
at 90 Hz, lift states at 50 Hz and the node's timer ticks at the period the
tree's rate table gives its ``tick`` in the sim dataflow; arms gets the
joint commands teleop's IK produced. Every event carries its ``seq`` like a real one and its value is
imported through the Arrow C data interface, as dora delivers it. It prints, per
node, the CPU time of its loop (first event to the end of its stream, model
loading excluded) per input event and per command, and the outputs per
command.

What it leaves out is dora: receiving an event and sending a message cost a
Python node roughly what ``benchmarks/stack_cpu.py``'s echo node measures, on
top of these figures. CPU time (``time.process_time``) is far less disturbed
by a busy machine than wall time, so two trees can be compared one after the
other.

    python benchmarks/node_loop_cost.py [--seconds 10] [--tick-ms teleop=10]
    python benchmarks/node_loop_cost.py --against main --blocks 6 [--seconds 6]

``--against REV`` compares this tree with another commit side by side: it
exports REV with ``git archive`` and runs the benchmark ``--blocks`` times in
each tree, alternating (each block in a fresh process, the order swapped from
block to block), then prints per node the median and the spread of the CPU
per command of both and the ratio of the medians. Each tree reads its own
rate table, so a changed timer period counts as part of the change
(``--tick-ms`` sets it the same for both). ``--tree DIR`` runs the benchmark
on the sources under DIR (a checkout or an export) instead of this one.
"""

from __future__ import annotations

import argparse
import importlib.abc
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

FRAME_HZ, JOINT_HZ, LIFT_HZ = 90.0, 90.0, 50.0


class TimedNode(MockNode):
    """A MockNode whose events are stamped on a simulated clock: taking an
    event sets ``now_ns`` to its time; CPU is measured from the first take."""

    def __init__(self, timed: list[tuple[int, dict]]) -> None:
        super().__init__([ev for _, ev in timed])
        self._times = [t for t, _ in timed] + [timed[-1][0] if timed else 0]
        self._taken = 0
        self.now_ns = timed[0][0] if timed else 0
        self.cpu_start: float | None = None
        self.events = len(timed)
        self.sent_meta: dict[str, list[dict]] = {}

    def _advance(self, n: int) -> None:
        self._taken = min(self._taken + n, len(self._times) - 1)
        self.now_ns = self._times[max(self._taken - 1, 0)]

    def next(self, timeout=None):
        if self.cpu_start is None:
            self.cpu_start = time.process_time()
        ev = super().next(timeout)
        if ev is not None:
            self._advance(1)
        return ev

    def drain(self):
        # only what "has arrived" by now: events up to the current simulated time
        out = []
        while self._events and self._taken < len(self._times) - 1 and self._times[self._taken] <= self.now_ns:
            out.append(self._events.popleft())
            self._taken += 1
        return out

    def send_output(self, output_id, data, metadata=None):
        super().send_output(output_id, data, metadata)
        self.sent_meta.setdefault(output_id, []).append(dict(metadata or {}))

    def log(self, *args, **kwargs):
        pass


def _fresh(value: pa.Array) -> pa.Array:
    """The array as dora hands it over: imported through the C data interface,
    with a type object of its own (which makes the contract's type check compare
    it in full, as in a live node)."""
    return pa.Array._import_from_c_capsule(*value.__arrow_c_array__())


def _input(input_id: str, value: pa.Array, seq: int | None) -> dict:
    return {"type": "INPUT", "id": input_id, "value": _fresh(value), "metadata": {} if seq is None else {"seq": seq}}


def _tick_value() -> pa.Array:
    return pa.array([], type=pa.null())


def _schedule(streams: dict[str, list[tuple[int, pa.Array | None]]], ticks_ns: list[int] | None) -> list[tuple[int, dict]]:
    out = []
    for input_id, items in streams.items():
        for seq, (t, value) in enumerate(items):
            out.append((t, _input(input_id, value, seq)))
    for t in ticks_ns or []:
        out.append((t, _input("tick", _tick_value(), None)))
    out.sort(key=lambda x: x[0])
    return out


def _times(t0: int, seconds: float, hz: float) -> list[int]:
    return [t0 + int(k * 1e9 / hz) for k in range(int(seconds * hz))]


def _run(main, timed: list[tuple[int, dict]], env: dict[str, str]) -> tuple[TimedNode, float]:
    node = TimedNode(timed)
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        main([], node=node, clock=lambda: node.now_ns) if "clock" in main.__code__.co_varnames else main([], node=node)
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return node, time.process_time() - (node.cpu_start or time.process_time())


REPO = Path(__file__).resolve().parents[1]


class _TreeFinder(importlib.abc.MetaPathFinder):
    """Maps the top-level teledora packages onto another source tree (its
    pyproject's package-dir); their submodules then load from there too."""

    def __init__(self, tree: Path) -> None:
        dirs = tomllib.loads((tree / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
        self.dirs = {name: tree / rel for name, rel in dirs.items()}

    def find_spec(self, fullname, path=None, target=None):
        d = self.dirs.get(fullname)
        if d is None:
            return None
        return importlib.util.spec_from_file_location(fullname, d / "__init__.py", submodule_search_locations=[str(d)])


def _use_tree(tree: Path) -> None:
    if any(m == "teledora" or m.startswith("teledora.") for m in sys.modules):
        raise RuntimeError("teledora was imported before --tree took effect")
    sys.meta_path.insert(0, _TreeFinder(tree))


def _compare(args: argparse.Namespace) -> int:
    """Alternating blocks of this tree and ``args.against``; medians per node."""
    with tempfile.TemporaryDirectory(prefix="node_loop_cost_") as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.against], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        sides = {"this tree": [], args.against: []}
        common = [sys.executable, __file__, "--seconds", str(args.seconds), "--rows-json"]
        for item in args.tick_ms:
            common += ["--tick-ms", item]
        for block in range(args.blocks):
            order = [("this tree", []), (args.against, ["--tree", tmp])]
            for name, extra in (order if block % 2 == 0 else order[::-1]):
                out = subprocess.run(common + extra, check=True, capture_output=True, text=True, cwd=tmp).stdout
                sides[name].append(json.loads(out.strip().splitlines()[-1]))
                if (name == "this tree") == sides[name][-1]["source"].startswith(tmp):
                    raise RuntimeError(f"{name} ran the wrong sources: {sides[name][-1]['source']}")
                print(f"block {block + 1}/{args.blocks} {name}: "
                      + ", ".join(f"{r['node']} {r['us_per_command']:.0f}" for r in sides[name][-1]["rows"]) + " us/command",
                      flush=True)
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    print(f"\nCPU per command, median (min-max) of {args.blocks} alternating blocks of {args.seconds:.0f} s each "
          f"(load average at the end {load})")
    print(f"{'node':<8} {'this tree us':>22} {args.against + ' us':>22} {'ratio':>6}   ticks this / {args.against}")
    nodes = [r["node"] for r in sides["this tree"][0]["rows"]]
    for i, node in enumerate(nodes):
        cols = []
        for name in sides:
            v = [b["rows"][i]["us_per_command"] for b in sides[name]]
            cols.append((statistics.median(v), min(v), max(v)))
        ticks = " / ".join(str(sides[n][0]["ticks_hz"].get(node, "-")) for n in sides)
        print(f"{node:<8} {cols[0][0]:>7.0f} ({cols[0][1]:.0f}-{cols[0][2]:.0f}){'':>4} {cols[1][0]:>7.0f} "
              f"({cols[1][1]:.0f}-{cols[1][2]:.0f}){'':>4} {cols[0][0] / cols[1][0]:>6.2f}   {ticks}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--tick-ms", action="append", default=[], metavar="NODE=MS",
                    help="override a node's tick period (teleop, which runs the IK too), e.g. teleop=20")
    ap.add_argument("--against", metavar="REV", default=None, help="compare with this commit, side by side")
    ap.add_argument("--blocks", type=int, default=6, help="with --against: runs per tree, alternating")
    ap.add_argument("--tree", type=Path, default=None, help="run on the sources under this directory")
    ap.add_argument("--rows-json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.against:
        return _compare(args)
    if args.tree is not None:
        _use_tree(args.tree.resolve())

    from teledora import models
    from teledora.models.config_files import load_demo_script, load_rate_table
    from teledora.nodes.drive import arms_sim
    from teledora.nodes.teleop import teleop
    from teledora.operators.contract.messages import encode
    from teledora.operators.xr.scripted_operator import ScriptedOperator

    profile = models.load_profile()
    names = list(profile.arm_joint_names)
    script = ScriptedOperator(load_demo_script(None))
    t0 = 1_800_000_000_000_000_000
    seconds = min(args.seconds, script.duration_s)
    frames = [(t, encode("XrControllers", script.report((t - t0) / 1e9, t, k))) for k, t in enumerate(_times(t0, seconds, FRAME_HZ))]
    q = np.zeros(len(names))
    joints = [(t, encode("JointState", {"stamp_ns": t, "names": names, "position": q, "velocity": q, "effort": q}))
              for t in _times(t0 + 3_000_000, seconds, JOINT_HZ)]
    lifts = [(t, encode("LiftState", {"stamp_ns": t, "height_m": 0.2, "velocity_m_s": 0.0, "homed": True}))
             for t in _times(t0 + 5_000_000, seconds, LIFT_HZ)]
    rates = load_rate_table()
    tick_ms = {n: float(rates.timer_ms(n, "sim")) for n in ("teleop",)}
    for item in args.tick_ms:
        name, _, ms = item.partition("=")
        if name not in tick_ms:
            ap.error(f"--tick-ms: unknown node {name!r}")
        tick_ms[name] = float(ms)
    tick_hz = {n: 1000.0 / ms for n, ms in tick_ms.items()}
    ticks = {n: _times(t0 + 1_000_000, seconds, hz) for n, hz in tick_hz.items()}

    rows = []
    node, cpu = _run(teleop.main, _schedule({"controllers": frames, "joint_states": joints, "lift": lifts}, ticks["teleop"]),
                     {"TELEDORA_ENDS_WITH": "controllers"})
    rows.append(("teleop", node.events, len(frames), cpu, len(node.outputs.get("arm_targets", []))))

    def outputs(n: TimedNode, output: str) -> list[tuple[int, pa.Array]]:
        return [(int(v.field("stamp_ns")[0].as_py()), v) for v in n.outputs.get(output, [])]

    commands = outputs(node, "joint_commands")
    node, cpu = _run(arms_sim.main, _schedule({"joint_commands": commands, "sim_joint_states": joints}, None),
                     {"TELEDORA_ENDS_WITH": "joint_commands", "TELEDORA_RECORDER_GUARD": "off"})
    rows.append(("arms", node.events, len(commands), cpu, len(node.outputs.get("servo_targets", []))))

    if args.rows_json:
        print(json.dumps({"ticks_hz": {n: round(hz, 1) for n, hz in tick_hz.items()}, "source": teleop.__file__, "rows": [
            {"node": name, "events": events, "commands": cmds, "outputs": outs,
             "us_per_event": cpu / max(events, 1) * 1e6, "us_per_command": cpu / max(cmds, 1) * 1e6}
            for name, events, cmds, cpu, outs in rows]}))
        return 0
    print(f"node loop CPU without dora, {seconds:.0f} s of synthetic input ({os.cpu_count()} CPUs, "
          f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}; ticks: "
          + ", ".join(f"{n} {hz:.0f} Hz" for n, hz in tick_hz.items()) + ")")
    print(f"{'node':<8} {'events':>7} {'commands':>9} {'outputs':>8} {'us/event':>9} {'us/command':>11}")
    for name, events, cmds, cpu, outs in rows:
        print(f"{name:<8} {events:>7} {cmds:>9} {outs:>8} {cpu / max(events, 1) * 1e6:>9.0f} {cpu / max(cmds, 1) * 1e6:>11.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
