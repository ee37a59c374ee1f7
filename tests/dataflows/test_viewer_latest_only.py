"""The viewer node under a sender much faster than it: it drops, never blocks
the sender, and once the burst is over it shows the newest message (its inputs
as `--view` wires them, plus the node's newest-per-input)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytest.importorskip("rerun", reason="rerun-sdk is not installed (pip install -e '.[view]')")
from rerun.chunk import RrdReader  # noqa: E402

from teledora import models  # noqa: E402
from teledora.operators.dataflow.viewer_node import QUEUE_SIZE, with_viewer  # noqa: E402

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
N = 3000

SENDER = """
import json, time
from dora import Node
from teledora.operators.contract.messages import encode
node = Node()
for event in node:  # start once the viewer is up (its first diagnostics)
    if event["type"] == "INPUT":
        break
t0 = time.time_ns()
worst = 0
def send(i):
    node.send_output("state", encode("LiftState", {{"stamp_ns": t0 + i * 1000, "height_m": i * 1e-4,
                     "velocity_m_s": 0.0, "homed": True}}), {{"seq": i}})
for i in range({n}):
    t = time.perf_counter_ns()
    send(i)
    worst = max(worst, time.perf_counter_ns() - t)
burst_s = (time.time_ns() - t0) / 1e9
time.sleep(1.0)
send({n})  # the last word, after the burst
print("SENDER", json.dumps({{"sent": {n} + 1, "burst_s": burst_s, "worst_send_ms": worst / 1e6}}), flush=True)
"""


def test_viewer_drops_old_messages_and_never_holds_the_sender(tmp_path):
    (tmp_path / "sender.py").write_text(SENDER.format(n=N))
    config = models.load_yaml("alohamini2/viewer.yaml")
    config["rates_hz"] = {k: 0.0 for k in config["rates_hz"]}  # show every message it gets
    (tmp_path / "viewer.yaml").write_text(yaml.safe_dump(config))
    rrd = tmp_path / "view.rrd"
    shipped = {"nodes": [{"id": "lift", "path": "sender.py", "outputs": ["state"],
                          "output_types": {"state": "teledora/msgs/v1/LiftState"},
                          "inputs": {"viewer_up": "viewer/diagnostics"}}]}
    flow = with_viewer(shipped, str(tmp_path), str(REPO / "nodes" / "viewing" / "viewer.py"))
    viewer = flow["nodes"][-1]
    assert viewer["inputs"] == {"lift__state": {"source": "lift/state", "queue_size": QUEUE_SIZE}}
    viewer["args"] = f"--config {tmp_path / 'viewer.yaml'} --output save --rrd {rrd}"
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run([str(BIN / "dora"), "run", "flow.yml"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=240)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert f'"sent": {N + 1}' in text, text[-3000:]
    assert "Discarding event" not in text  # dora's per-drop warning is silenced for the viewer
    rows = []
    for chunk in RrdReader(rrd).stream():
        if chunk.entity_path == "/plots/lift/height_m":
            batch = chunk.to_record_batch()
            rows += zip(batch.column("stamp").cast("int64").to_pylist(), (r[0] for r in batch.column("Scalars:scalars").to_pylist()))
    heights = [h for _, h in sorted(rows)]
    print(text[text.find("SENDER"):].splitlines()[0], f"shown {len(heights)} of {N}")
    assert 0 < len(heights) < N, "the viewer either showed nothing or never dropped under a burst"
    assert heights[-1] == pytest.approx(N * 1e-4)  # not stuck behind the burst: the last word is shown
    assert heights == sorted(heights)
