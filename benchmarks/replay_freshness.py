"""How fresh a replayed run's control path is: the ik's stale-feedback steps.

    python benchmarks/replay_freshness.py RUN [--replace xr,arms] [--speed 1]

Replays RUN with ``teledora replay RUN --replace ...`` (the named nodes send
their recorded outputs; the rest, teleop and its IK included, runs live), then counts, in
the original and in the replay's recording, the ik steps in which an arm held
because its joint feedback was stale (``teleop/joint_commands`` metadata
``left_status`` / ``right_status`` = ``stale_feedback``). Prints both shares
and their ratio, measured side by side from one replay.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO))

from teledora.recording import RunReader  # noqa: E402

TOPIC = "teleop__joint_commands"


def stale_share(run: Path) -> tuple[int, int]:
    """(steps with an arm on stale feedback, steps) of the ik in ``run``."""
    stale = total = 0
    for msg in RunReader(run).iter_topic(TOPIC):
        meta = json.loads(msg.metadata or "{}")
        total += 1
        stale += any(meta.get(f"{s}_status") == "stale_feedback" for s in ("left", "right"))
    return stale, total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path)
    ap.add_argument("--replace", default="xr,arms")
    ap.add_argument("--speed", default="1")
    args = ap.parse_args()
    runs = Path(tempfile.mkdtemp(prefix="replay_freshness_"))
    cmd = [str(BIN / "teledora"), "replay", str(args.run), "--replace", args.replace, "--speed", args.speed, "--runs-dir", str(runs)]
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=900)
    match = re.search(r"recording of the replay in (\S+)", out.stdout)
    if out.returncode != 0 or not match:
        print((out.stdout + out.stderr)[-3000:])
        return 2
    replay = Path(match.group(1))
    s0, n0 = stale_share(args.run)
    s1, n1 = stale_share(replay)
    print(f"original {args.run}: {s0}/{n0} ik steps on stale feedback ({100 * s0 / max(n0, 1):.1f} %)")
    print(f"replay --replace {args.replace} at speed {args.speed} ({replay}): {s1}/{n1} ({100 * s1 / max(n1, 1):.1f} %)")
    if n0 and n1 and s0:
        print(f"ratio replay/original: {(s1 / n1) / (s0 / n0):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
