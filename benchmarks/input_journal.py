"""What an input journal costs the teleop node, and what following one costs.

Runs the real teleop node (``nodes/teleop/teleop.py``) under ``dora.testing.MockNode``
on the same stream of controller reports, joint and lift states and timer
ticks, one event per batch, in three modes, alternating (in rotating order) so
machine load hits all alike:

* ``off``:    NodeIO without a journal (what the node cost before journals);
* ``record``: the node as shipped, writing its journal;
* ``follow``: the node following that journal (an exact replay).

Prints the median and p99 per batch (µs, process CPU time per run divided by
its batches) and the ratios to ``off``.

    python benchmarks/input_journal.py [--reports 2000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

from teledora.models import load_profile
from teledora.runtime import node_io as dora_io
from teledora.nodes.teleop import teleop
from teledora.recording.journal_files import FOLLOW_ENV
from teledora.operators.contract.messages import encode
from teledora.recording import RunWriter

MS = 1_000_000
ARM = list(load_profile().arm_joint_names)


class OneByOne(MockNode):
    def drain(self):
        return []


def hand(t_ns: int, x: float) -> dict:
    return dict(connected=True, epoch=1, pose_valid=True, position=[x, 0.2, 1.0], orientation=[0.0, 0.0, 0.0, 1.0],
                trigger=0.0, squeeze=1.0, stick=[0.3, 0.0], primary=False, secondary=False, stick_click=False,
                menu=False, pose_stamp_ns=t_ns, input_stamp_ns=t_ns)


def events(n: int) -> list[dict]:
    t0 = time.time_ns()
    out = []
    for i in range(n):
        t = t0 + i * 11 * MS
        msg = dict(stamp_ns=t, frame_id="operator", seq=i, source="bench", focused=True, ui_estop=False,
                   ui_release_stop=False, ui_pause=False, ui_episode_start=False,
                   ui_episode_keep=False, ui_episode_discard=False, left=hand(t, 0.3 + 1e-4 * i), right=hand(t, 0.31))
        out.append({"type": "INPUT", "id": "controllers", "value": encode("XrControllers", msg), "metadata": {"seq": i}})
        if i % 2 == 0:
            js = encode("JointState", dict(stamp_ns=t, names=ARM, position=np.full(14, 1e-4 * i), velocity=[], effort=[]))
            out.append({"type": "INPUT", "id": "joint_states", "value": js, "metadata": {"seq": i // 2}})
            lift = encode("LiftState", dict(stamp_ns=t, height_m=0.3, velocity_m_s=0.0, homed=True))
            out.append({"type": "INPUT", "id": "lift", "value": lift, "metadata": {"seq": i // 2}})
        out.append({"type": "INPUT", "id": "tick", "value": pa.array([], type=pa.null()), "metadata": {}})
    return out


class NoJournal(dora_io.NodeIO):
    def __init__(self, node, name, clock=time.time_ns, journal=False):
        super().__init__(node, name, clock, journal=False)


def run(mode: str, stream: list[dict], run_dir: str | None) -> tuple[float, MockNode]:
    node = OneByOne([dict(e) for e in stream])
    original = teleop.NodeIO
    if mode == "off":
        teleop.NodeIO = NoJournal
    if mode == "follow":
        os.environ[FOLLOW_ENV] = run_dir or ""
    try:
        started = time.process_time()
        teleop.main([], node=node)
        return (time.process_time() - started) / len(stream), node
    finally:
        teleop.NodeIO = original
        os.environ.pop(FOLLOW_ENV, None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reports", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    stream = events(args.reports)
    with tempfile.TemporaryDirectory() as tmp:
        _, recorded = run("record", stream, None)
        run_dir = Path(tmp) / "run"
        writer = RunWriter(run_dir, {"recorded_inputs": {"teleop__journal": "teleop/journal"}}, start_ns=0)
        for i, value in enumerate(recorded.outputs["journal"]):
            writer.append("teleop__journal", value, {"seq": i}, i)
        writer.close(1)
        costs: dict[str, list[float]] = {"off": [], "record": [], "follow": []}
        modes = list(costs)
        for r in range(args.rounds):
            for mode in modes[r % 3:] + modes[:r % 3]:  # rotate: no mode always runs first
                cost, _ = run(mode, stream, str(run_dir))
                costs[mode].append(cost * 1e6)
    print(f"teleop, {len(stream)} batches per run, {args.rounds} rounds (µs of CPU per batch)")
    base = float(np.median(costs["off"]))
    for mode, values in costs.items():
        med, p99 = float(np.median(values)), float(np.percentile(values, 99))
        print(f"  {mode:7s} median {med:7.1f}  p99 {p99:7.1f}  ratio to off {med / base:5.2f}")


if __name__ == "__main__":
    main()
