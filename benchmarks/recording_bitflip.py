"""Single-bit flips over a recorded run: detected, silent, traceback or abort.

    python benchmarks/recording_bitflip.py RUN [--flips 600] [--seed 22]

Flips one bit at a time in a copy of RUN (a file is chosen uniformly among
the run's files, topic files, checksum indexes and the manifest alike, then a
byte and a bit uniformly within it), reads the run the way a user would, in
a forked child, and restores the bit. The child runs ``log check`` (every
batch's checksum and the manifest), ``log info``'s summary, and reads every
message of the flipped topic. Outcomes:

- detected: the check reports a problem;
- silent-same: no problem reported and the flipped topic reads back equal;
- silent-different: no problem reported but the content changed;
- traceback: the child raised;
- abort: the child died of a signal (e.g. SIGABRT inside Arrow).

Prints the counts, the share detected, and the time per probe.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from teledora.commands.log import summarize  # noqa: E402
from teledora.recording import RunReader, value_digest  # noqa: E402
from teledora.recording.run_check import check_run  # noqa: E402

OUTCOMES = {10: "detected", 11: "silent-same", 12: "silent-different", 13: "traceback"}


def topic_of(name: str) -> str | None:
    return name.split(".arrow")[0] if ".arrow" in name else None


def topic_digest(run: Path, topic: str | None) -> str:
    h = hashlib.sha256()
    if topic is None:
        return ""
    for msg in RunReader(run).iter_topic(topic):
        h.update(f"{msg.seq} {msg.dora_ns} {msg.recv_ns} {msg.stamp_ns} {msg.metadata}".encode())
        h.update(value_digest(msg.value).encode())
    return h.hexdigest()


def probe(run: Path, topic: str | None, baseline: dict[str | None, str]) -> str:
    pid = os.fork()
    if pid == 0:
        code = 13
        try:
            detected = not check_run(run).ok
            summarize(RunReader(run))
            digest = topic_digest(run, topic)
            code = 10 if detected else (11 if digest == baseline[topic] else 12)
        except BaseException:
            traceback.print_exc(limit=3)
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return f"abort (signal {os.WTERMSIG(status)})"
    return OUTCOMES.get(os.WEXITSTATUS(status), f"exit {os.WEXITSTATUS(status)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--flips", type=int, default=600)
    ap.add_argument("--seed", type=int, default=22)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bitflip_")) / args.run.name
    shutil.copytree(args.run, work)
    first = check_run(work)
    if not first.ok:
        print(f"the run does not check clean before flipping: {first.problems[:5]}")
        return 2
    files = sorted(p for p in work.iterdir() if p.is_file() and p.stat().st_size > 0)
    baseline = {topic_of(p.name): topic_digest(work, topic_of(p.name)) for p in files}
    rng = random.Random(args.seed)
    outcomes: collections.Counter[str] = collections.Counter()
    by_kind: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    examples: dict[str, list[str]] = collections.defaultdict(list)
    started = time.perf_counter()
    for _ in range(args.flips):
        path = rng.choice(files)
        byte = rng.randrange(path.stat().st_size)
        bit = rng.randrange(8)
        with open(path, "r+b") as f:
            f.seek(byte)
            old = f.read(1)[0]
            f.seek(byte)
            f.write(bytes([old ^ (1 << bit)]))
        try:
            outcome = probe(work, topic_of(path.name), baseline)
        finally:
            with open(path, "r+b") as f:
                f.seek(byte)
                f.write(bytes([old]))
        kind = "index" if path.name.endswith(".crc") else "manifest" if path.name == "manifest.json" else "topic file"
        outcomes[outcome] += 1
        by_kind[kind][outcome] += 1
        if outcome != "detected" and len(examples[outcome]) < 5:
            examples[outcome].append(f"{path.name} byte {byte} bit {bit}")
    elapsed = time.perf_counter() - started
    total = sum(outcomes.values())
    size = sum(p.stat().st_size for p in files)
    print(f"run {args.run} ({len(files)} files, {size / 1e6:.1f} MB), {total} single-bit flips, seed {args.seed}")
    for outcome, n in outcomes.most_common():
        print(f"  {outcome:<18} {n:>5}  {100 * n / total:6.2f} %")
    for kind, counter in sorted(by_kind.items()):
        print(f"  in {kind:<11} " + ", ".join(f"{o} {n}" for o, n in counter.most_common()))
    for outcome, where in examples.items():
        print(f"  e.g. {outcome}: " + "; ".join(where))
    print(f"detected {100 * outcomes['detected'] / total:.2f} %; {elapsed / total * 1000:.0f} ms per probe")
    shutil.rmtree(work.parent, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
