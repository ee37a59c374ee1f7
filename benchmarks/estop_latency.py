"""E-stop latency from the operator's hand to the teleop scheme and back to the headset.

Runs the real headset page in headless Chromium with IWER emulating a Quest 3
against the xr (WebXR) and teleop nodes wired in one process
(``teledora.fakes.emulated_headset``), and latches the stop ``--trials`` times
each way: the in-scene E-STOP (the right controller's ray on the panel, trigger
pressed) and the grip gesture (both squeezes). Between trials it releases the
stop with the two in-scene steps. Per stop it measures:

* press -> xr: from the XR frame in which the page saw the press to the xr
  node receiving the report that carries it (page wall clock against the
  host clock: one machine, one clock);
* xr -> teleop latched: from that receipt to teleop publishing the state that
  latched on it (both host clock);
* press -> shown: from the press frame to the first XR frame whose panel shows
  the stop latched (the round trip through both nodes and back over the WSS),
  in milliseconds and in XR frames.

Headless Chromium renders in software at about 60 frames/s; a headset renders
at 72-120 Hz, so the frame counts, not the milliseconds, carry over.

    python benchmarks/estop_latency.py [--trials 20]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
BROWSER = REPO / "tests" / "browser"
IWER = BROWSER / "node_modules" / "iwer" / "build" / "iwer.module.js"


def percentiles(values: list[float]) -> str:
    a = np.asarray(values, dtype=float)
    return f"median {np.median(a):6.1f}   p90 {np.percentile(a, 90):6.1f}   max {a.max():6.1f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20, help="stops of each kind")
    args = ap.parse_args(argv)
    if not (shutil.which("node") and Path("/usr/bin/chromium").exists() and IWER.exists()):
        print("needs node, /usr/bin/chromium and the npm packages under tests/browser (cd tests/browser && npm ci)")
        return 2

    from teledora.fakes.emulated_headset import run_headset
    from teledora.operators.contract.messages import decode

    with tempfile.TemporaryDirectory() as tmp:
        # generous pose/input timeouts: a loaded machine must not turn scheduling stalls into timeouts
        run = run_headset(BROWSER / "estop_trials.mjs", Path(tmp), IWER, {"pose_timeout_s": 5.0, "input_timeout_s": 5.0},
                          args=[str(args.trials)], timeout_s=60 + 10 * args.trials)
    if run.returncode != 0 or not any(s["step"] == "done" for s in run.steps):
        print(f"driver failed:\n{run.stdout}\n{run.stderr}", file=sys.stderr)
        return 1

    controllers = [decode("XrControllers", v) for v in run.xr.outputs["controllers"]]
    states = [decode("TeleopState", v) for v in run.teleop.outputs["state"]]
    xr_seqs = [m.get("xr_seq", -1) for m in run.teleop.metadata["state"]]

    def gesture(c: dict) -> bool:
        return c["left"]["squeeze"] >= 0.9 and c["right"]["squeeze"] >= 0.9

    # the reports that carried each stop, in order: rising edges of the page stop and of the gesture
    carried = {"scene": [], "gesture": []}
    for prev, c in zip(controllers, controllers[1:]):
        if c["ui_estop"] and not prev["ui_estop"]:
            carried["scene"].append(c)
        if gesture(c) and not gesture(prev):
            carried["gesture"].append(c)
    trials = [s for s in run.steps if s["step"] == "trial"]
    rows: dict[str, dict[str, list[float]]] = {}
    for kind in ("scene", "gesture"):
        mine = [t for t in trials if t["kind"] == kind]
        assert len(mine) == len(carried[kind]), (kind, len(mine), len(carried[kind]))
        r = rows[kind] = {"press_xr": [], "xr_teleop": [], "shown_ms": [], "shown_frames": []}
        for t, report in zip(mine, carried[kind]):
            latch = next(i for i, s in enumerate(states) if xr_seqs[i] >= report["seq"] and s["estop_latched"])
            assert not states[latch - 1]["estop_latched"], "the stop was latched before its report arrived"
            r["press_xr"].append((report["stamp_ns"] - t["press_ns"]) / 1e6)
            r["xr_teleop"].append((states[latch]["stamp_ns"] - report["stamp_ns"]) / 1e6)
            r["shown_ms"].append(t["ms"])
            r["shown_frames"].append(t["frames"])

    print(f"e-stop latency, {args.trials} stops of each kind (headless Chromium + IWER Quest 3, software GL)")
    for kind, title in (("scene", "in-scene E-STOP (trigger press on the panel)"), ("gesture", "grip gesture (both squeezes)")):
        r = rows[kind]
        print(f"\n{title}")
        print(f"  press -> xr receives the report    ms  {percentiles(r['press_xr'])}")
        print(f"  xr -> teleop latched               ms  {percentiles(r['xr_teleop'])}")
        print(f"  press -> panel shows it latched    ms  {percentiles(r['shown_ms'])}")
        print(f"  press -> panel shows it latched frames {percentiles(r['shown_frames'])}")
    both = rows["scene"]["press_xr"] + rows["gesture"]["press_xr"]
    print(f"\npress -> xr under one 60 Hz frame (16.7 ms) in "
          f"{sum(v < 1000 / 60 for v in both)} of {len(both)} stops")
    return 0


if __name__ == "__main__":
    sys.exit(main())
