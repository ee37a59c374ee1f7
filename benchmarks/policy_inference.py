"""Policy inference cost per step: inside the worker, and through the node's pipe.

Starts the policy node's inference worker (nodes/policy/policy_worker.py) on a
checkpoint, sends ``--steps`` observations one after the other as the node
does, and prints percentiles of the time the worker spends in
``select_action`` (pre- and post-processing included) and of the node's round
trip (JSON encoding, the pipe both ways, decoding). The difference is what
running inference in its own process costs over calling LeRobot in the node.
Without ``--checkpoint`` it makes the tests' small random-weight checkpoint
(``--type sac|tdmpc``) in a temporary directory.

    python benchmarks/policy_inference.py --python LEROBOT_PYTHON [--checkpoint DIR | --type sac] [--steps 300]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from teledora.nodes.policy.policy import InferenceWorker

REPO = Path(__file__).resolve().parents[1]


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", required=True, help="interpreter with torch and LeRobot")
    ap.add_argument("--checkpoint", type=Path)
    ap.add_argument("--type", default="sac", choices=["sac", "tdmpc"])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ck = args.checkpoint
        if ck is None:
            ck = Path(tmp) / "ck"
            subprocess.run([args.python, str(REPO / "tests/nodes/policy/tiny_checkpoint.py"), str(ck),
                            "--type", args.type], check=True)
        t0 = time.perf_counter()
        worker = InferenceWorker(args.python, ck, args.device, args.threads, 600.0)
        start_s = time.perf_counter() - t0
        infer, rt = [], []
        state = [0.0] * 18
        try:
            for k in range(args.steps):
                state[0] = float(k % 90)
                t = time.perf_counter()
                reply = worker.act(state, 60.0)
                rt.append(time.perf_counter() - t)
                if "error" in reply:
                    sys.exit(f"worker: {reply['error']}")
                infer.append(reply["infer_s"])
        finally:
            worker.close()
    hello = worker.hello
    over = [r - i for r, i in zip(rt, infer)]
    print(f"policy {hello['type']} on {hello['device']}, n_action_steps {hello['n_action_steps']}; "
          f"worker start {start_s:.1f} s (load {hello['load_s']:.1f} s); {args.steps} steps")
    for name, v in (("inference (in worker)", infer), ("round trip (node side)", rt), ("pipe + JSON overhead", over)):
        ms = [1e3 * x for x in v]
        print(f"  {name:24s} p50 {pct(ms, .5):8.3f} ms  p95 {pct(ms, .95):8.3f} ms  max {max(ms):8.3f} ms  "
              f"mean {statistics.fmean(ms):8.3f} ms")


if __name__ == "__main__":
    main()
