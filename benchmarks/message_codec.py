"""CPU per message of the contract codec (encode and decode), optionally against another commit.

Builds one valid message of every kind from the contract itself (numbers
varied per copy, lists at their required lengths, quaternions unit, names
unique), then times ``decode`` of the Arrow value and ``encode`` of the
decoded dict with ``time.process_time`` over ``--messages`` copies.

``--against REV`` loads ``operators/contract/messages.py`` of that commit as
a second module in the same process and alternates the two, ``--blocks``
times, the order swapped every block, on the same messages; it prints the
medians of both and their ratio. Machines are noisy: only the ratios
measured this way travel.

    python benchmarks/message_codec.py [--kinds XrControllers JointState ...]
    python benchmarks/message_codec.py --against main [--blocks 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from teledora.operators.contract import messages as tree_codec

REPO = Path(__file__).resolve().parents[1]
DEFAULT_KINDS = ("XrControllers", "ArmTargets", "JointState", "JointCommands", "LiftState", "Odometry", "TeleopState", "Diagnostics")
SPECIAL = {"level": "ok", "frame_id": "base_link", "encoding": "rgb8"}  # strings a check reads


def _value(field: Any, i: int, lengths: dict[str, int], codec: types.ModuleType) -> Any:
    """A valid value for ``field`` in copy ``i`` of a message."""
    t = field.type
    if t in codec._NESTED:
        return {f.name: _value(f, i, lengths, codec) for f in codec._NESTED[t]}
    if pa.types.is_list(t):
        n = field.length or lengths.get(field.same_length_as or "", 3)
        if field.quaternion:
            a = 0.1 * (i % 7)
            return [0.0, 0.0, float(np.sin(a)), float(np.cos(a))]
        if pa.types.is_string(t.value_type):
            return [f"{field.name}_{k}" for k in range(n)]
        if pa.types.is_integer(t.value_type):
            return [1] * n
        return [0.01 * (i + k) for k in range(n)]
    if pa.types.is_boolean(t):
        return i % 2 == 0
    if pa.types.is_integer(t):
        return 1 + i
    if pa.types.is_floating(t):
        return 0.5 + 0.001 * i
    return SPECIAL.get(field.name, f"{field.name}-{i % 3}")


def sample_messages(kind: str, n: int, codec: types.ModuleType) -> list[dict]:
    """``n`` valid messages of ``kind`` built from the contract's field table."""
    fields = codec.KINDS[kind]
    out = []
    for i in range(n):
        lengths: dict[str, int] = {}
        msg = {}
        for f in fields:
            msg[f.name] = _value(f, i, lengths, codec)
            if isinstance(msg[f.name], list):
                lengths[f.name] = len(msg[f.name])
        if kind == "InputJournal":  # counts that add up
            msg.update(step_events=[len(msg["event_inputs"])], step_reads=[len(msg["clock_ns"])], first_step=0)
        out.append(msg)
    return out


def load_codec(rev: str) -> types.ModuleType:
    """``operators/contract/messages.py`` of ``rev`` as a module of its own."""
    source = subprocess.run(["git", "-C", str(REPO), "show", f"{rev}:operators/contract/messages.py"],
                            check=True, capture_output=True, text=True).stdout
    name = f"messages_at_{rev.replace('/', '_').replace('-', '_')}"
    module = types.ModuleType(name)
    sys.modules[name] = module  # dataclasses look their module up while the source runs
    exec(compile(source, f"{rev}:operators/contract/messages.py", "exec"), module.__dict__)
    return module


def time_codec(codec: types.ModuleType, kind: str, values: list[pa.Array], msgs: list[dict]) -> tuple[float, float]:
    """µs of CPU per decode and per encode."""
    t0 = time.process_time()
    for v in values:
        codec.decode(kind, v)
    t1 = time.process_time()
    for m in msgs:
        codec.encode(kind, m)
    t2 = time.process_time()
    return (t1 - t0) / len(values) * 1e6, (t2 - t1) / len(msgs) * 1e6


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kinds", nargs="+", default=list(DEFAULT_KINDS))
    ap.add_argument("--messages", type=int, default=300, help="copies of each kind per block")
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--against", metavar="REV", default=None, help="compare with this commit's codec, interleaved")
    args = ap.parse_args(argv)
    codecs = {"this tree": tree_codec}
    if args.against:
        codecs[args.against] = load_codec(args.against)
    data = {}
    for kind in args.kinds:
        msgs = sample_messages(kind, args.messages, tree_codec)
        values = [tree_codec.encode(kind, m) for m in msgs]
        data[kind] = (values, [tree_codec.decode(kind, v) for v in values])
    times: dict[str, dict[str, list[tuple[float, float]]]] = {c: {k: [] for k in args.kinds} for c in codecs}
    load0 = os.getloadavg()[0]
    for block in range(args.blocks):
        order = list(codecs) if block % 2 == 0 else list(reversed(codecs))
        for name in order:
            for kind in args.kinds:
                times[name][kind].append(time_codec(codecs[name], kind, *data[kind]))
    load1 = os.getloadavg()[0]
    print(f"contract codec, µs of CPU per message, median of {args.blocks} blocks x {args.messages} messages "
          f"(load average {load0:.2f} at the start, {load1:.2f} at the end)")
    names = list(codecs)
    head = f"{'kind':<15} {'fields':>6} " + " ".join(f"{'decode ' + n:>18} {'encode ' + n:>18}" for n in names)
    if args.against:
        head += f" {'decode ratio':>12} {'encode ratio':>12}"
    print(head)
    for kind in args.kinds:
        fields = sum(len(tree_codec._NESTED[f.type]) if f.type in tree_codec._NESTED else 1 for f in tree_codec.KINDS[kind])
        med = {n: (statistics.median(d for d, _ in times[n][kind]), statistics.median(e for _, e in times[n][kind])) for n in names}
        line = f"{kind:<15} {fields:>6} " + " ".join(f"{med[n][0]:18.1f} {med[n][1]:18.1f}" for n in names)
        if args.against:
            line += f" {med[names[0]][0] / med[names[1]][0]:12.2f} {med[names[0]][1] / med[names[1]][1]:12.2f}"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
