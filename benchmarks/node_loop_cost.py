"""CPU per message of the control nodes' own loops, without dora: teleop, ik and arms in one process.

Feeds each node's ``main`` a ``dora.testing.MockNode`` holding a synthetic run
on a simulated clock: the demo script's XR reports at 90 Hz, arm joint states
at 90 Hz, lift states at 50 Hz and the node's 100 Hz timer ticks; ik gets the
arm targets and states teleop produced from them, arms the joint commands ik
produced. Every event carries its ``seq`` like a real one and its value is
imported through the Arrow C data interface, as dora delivers it. It prints, per
node, the CPU time of its loop (first event to the end of its stream, model
loading excluded) per input event and per command, and the outputs per
command.

What it leaves out is dora: receiving an event and sending a message cost a
Python node roughly what ``benchmarks/stack_cpu.py``'s echo node measures, on
top of these figures. CPU time (``time.process_time``) is far less disturbed
by a busy machine than wall time, so two trees can be compared one after the
other.

    python benchmarks/node_loop_cost.py [--seconds 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

FRAME_HZ, JOINT_HZ, LIFT_HZ, TICK_HZ = 90.0, 90.0, 50.0, 100.0


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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args(argv)

    from teledora import models
    from teledora.models.config_files import load_demo_script
    from teledora.nodes.drive import arms_sim
    from teledora.nodes.ik import ik
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
    ticks = _times(t0 + 1_000_000, seconds, TICK_HZ)

    rows = []
    node, cpu = _run(teleop.main, _schedule({"controllers": frames, "joint_states": joints, "lift": lifts}, ticks),
                     {"TELEDORA_ENDS_WITH": "controllers"})
    rows.append(("teleop", node.events, len(frames), cpu, len(node.outputs.get("arm_targets", []))))

    def outputs(n: TimedNode, output: str) -> list[tuple[int, pa.Array]]:
        return [(int(v.field("stamp_ns")[0].as_py()), v) for v in n.outputs.get(output, [])]

    targets, states = outputs(node, "arm_targets"), outputs(node, "state")
    node, cpu = _run(ik.main, _schedule({"arm_targets": targets, "teleop_state": states, "joint_states": joints, "lift": lifts}, ticks),
                     {"TELEDORA_ENDS_WITH": "arm_targets"})
    rows.append(("ik", node.events, len(targets), cpu, len(node.outputs.get("joint_commands", []))))

    commands = outputs(node, "joint_commands")
    node, cpu = _run(arms_sim.main, _schedule({"joint_commands": commands, "sim_joint_states": joints}, None),
                     {"TELEDORA_ENDS_WITH": "joint_commands", "TELEDORA_RECORDER_GUARD": "off"})
    rows.append(("arms", node.events, len(commands), cpu, len(node.outputs.get("servo_targets", []))))

    print(f"node loop CPU without dora, {seconds:.0f} s of synthetic input ({os.cpu_count()} CPUs, "
          f"load average {' '.join(open('/proc/loadavg').read().split()[:3])})")
    print(f"{'node':<8} {'events':>7} {'commands':>9} {'outputs':>8} {'us/event':>9} {'us/command':>11}")
    for name, events, cmds, cpu, outs in rows:
        print(f"{name:<8} {events:>7} {cmds:>9} {outs:>8} {cpu / max(events, 1) * 1e6:>9.0f} {cpu / max(cmds, 1) * 1e6:>11.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
