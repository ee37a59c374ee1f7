"""The sim cameras' rate in the demo: runs `teledora demo` (the whole sim dataflow,
recorder included) and prints, per recorded camera, the frames recorded, the
rate between its first and last frame against the configured rate_hz, the
render time per frame the cameras node reported, and the machine's load.

    python benchmarks/sim_camera_rate.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

BIN = Path(sys.executable).parent


def main() -> int:
    from teledora.models.config_files import load_renderer_config
    from teledora.operators.contract.messages import decode
    from teledora.recording import RunReader

    runs = Path(tempfile.mkdtemp(prefix="teledora-camrate-"))
    load_before = os.getloadavg()
    env = dict(os.environ, MUJOCO_GL="egl", TELEDORA_RECORDER_MAX_LAG_S="120", TELEDORA_RECORDER_TIMEOUT_S="60")
    proc = subprocess.run([str(BIN / "teledora"), "demo", "--runs-dir", str(runs)], env=env, capture_output=True,
                          text=True, timeout=900)
    load_after = os.getloadavg()
    run_dirs = sorted(p for p in runs.iterdir() if p.is_dir())
    if proc.returncode != 0 or not run_dirs:
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        return 1
    reader = RunReader(run_dirs[-1])
    config = load_renderer_config()
    render_ms: dict[str, float] = {}
    for m in reader.iter_topic("cameras__diagnostics"):
        details = json.loads(decode("Diagnostics", m.value)["details_json"])
        render_ms.update(details.get("render_ms", {}))
    print(f"# sim camera rate in `teledora demo`: {os.cpu_count()} CPUs, load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after")
    print("| camera | configured Hz | frames | span s | recorded Hz | median interval ms | p95 interval ms | last render ms |")
    print("|---|---|---|---|---|---|---|---|")
    for cam in config.enabled_cameras:
        topic = f"cameras__{cam.name}"
        if topic not in reader.topics:
            print(f"| {cam.name} | {cam.rate_hz:g} | 0 | | | | | |")
            continue
        t = np.array(sorted(json.loads(m.metadata)["capture_ns"] for m in reader.iter_topic(topic)), dtype=float)
        span = (t[-1] - t[0]) / 1e9 if len(t) > 1 else float("nan")
        dt = np.diff(t) / 1e6
        print(f"| {cam.name} | {cam.rate_hz:g} | {len(t)} | {span:.1f} | {(len(t) - 1) / span:.2f} | "
              f"{np.median(dt):.0f} | {np.percentile(dt, 95):.0f} | {render_ms.get(cam.name, float('nan')):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
