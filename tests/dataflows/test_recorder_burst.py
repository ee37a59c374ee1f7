"""A burst of 10,000 messages, sent as fast as possible, all reach the recording."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from teledora.recording import RunReader

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
N = 10_000

PRODUCER = """
import time
from dora import Node
from teledora.operators.contract.messages import encode
node = Node()
for i in range({n}):
    node.send_output("out", encode("LiftCommand", {{"stamp_ns": time.time_ns(), "velocity_m_s": float(i)}}), {{"seq": i}})
"""


def test_burst_of_10000_is_recorded_whole_and_in_order(tmp_path):
    (tmp_path / "burst.py").write_text(PRODUCER.format(n=N))
    flow = {
        "nodes": [
            {"id": "burst", "path": "burst.py", "outputs": ["out"]},
            {
                "id": "recorder",
                "path": str(REPO / "nodes" / "recording" / "recorder.py"),
                # backpressure alone keeps at most max(queue_size, 100) queued in dora 1.1.0
                "inputs": {"burst__out": {"source": "burst/out", "queue_policy": "backpressure", "queue_size": N}},
                "outputs": ["diagnostics"],
            },
        ]
    }
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, TELEDORA_RUN_DIR=str(tmp_path / "run"))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    out = subprocess.run([str(BIN / "dora"), "run", "flow.yml"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    reader = RunReader(tmp_path / "run")
    assert reader.complete
    table = reader.read_topic("burst__out").table
    assert [json.loads(m)["seq"] for m in table.column("metadata").to_pylist()] == list(range(N))
    assert table.column("seq").to_pylist() == list(range(N))
    assert reader.manifest["gaps"]["counter"] == 0
    assert f"recording finished: {(tmp_path / 'run').resolve()} ({N} messages)" in out.stdout
