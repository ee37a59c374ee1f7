"""Each node's shared-memory pool: small where a node's outputs are small, dora's
default where it sends images, and a message bigger than the pool still arrives
whole (dora copies it instead), which is what makes the small pools safe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
IMAGE_TYPE = "std/media/v1/Image"
SMALL_POOL_BYTES = 256 * 1024
UNITS = {"B": 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}  # dora's byte-size units


def pool_bytes(value) -> int:
    """dora's reading of ``shared_memory_pool_size``: bytes, or a number with a unit."""
    if isinstance(value, int):
        return value
    text = str(value).strip().upper()
    for unit in sorted(UNITS, key=len, reverse=True):
        if text.endswith(unit):
            return int(float(text[: -len(unit)]) * UNITS[unit])
    return int(text)


@pytest.mark.parametrize("name", ["sim.yml", "hardware.yml", "sim_distributed.yml"])
def test_only_image_senders_keep_the_default_pool(name: str) -> None:
    flow = yaml.safe_load((REPO / "dataflows" / name).read_text())
    for node in flow["nodes"]:
        sends_images = IMAGE_TYPE in (node.get("output_types") or {}).values()
        pool = node.get("shared_memory_pool_size")
        if sends_images:
            assert pool is None, f"{name}: {node['id']} sends frames and needs dora's default pool, not {pool}"
        else:
            assert pool is not None, f"{name}: {node['id']} would hold dora's 8 MB default pool for small messages"
            assert pool_bytes(pool) == SMALL_POOL_BYTES, f"{name}: {node['id']}: {pool}"


def test_pool_bytes_reads_dora_units() -> None:
    assert pool_bytes("256KB") == 262144
    assert pool_bytes("8MB") == 8 * 1024 * 1024
    assert pool_bytes(4096) == 4096


SENDER = """
import numpy as np, pyarrow as pa
from dora import Node
node = Node()
n = 0
for event in node:
    if event["type"] == "INPUT":
        n += 1
        node.send_output("out", pa.array(np.full({size}, n, dtype=np.float32)))
        if n == {count}:
            break
"""

RECEIVER = """
import json
from dora import Node
got = []
for event in Node():
    if event["type"] == "INPUT":
        v = event["value"].to_numpy()
        got.append([len(v), int(v[0]), int(v[-1]), int((v == v[0]).all())])
print("RECEIVED", json.dumps(got), flush=True)
"""


@pytest.mark.dataflow
def test_a_message_bigger_than_the_pool_arrives_whole(tmp_path) -> None:
    size, count = 25_000, 30  # 100 KB of float32 a message, through a 64 KB pool
    (tmp_path / "sender.py").write_text(SENDER.format(size=size, count=count))
    (tmp_path / "receiver.py").write_text(RECEIVER)
    flow = {"nodes": [
        {"id": "sender", "path": "sender.py", "shared_memory_pool_size": "64KB",
         "inputs": {"tick": "dora/timer/millis/20"}, "outputs": ["out"]},
        {"id": "receiver", "path": "receiver.py", "inputs": {"x": {"source": "sender/out", "queue_size": 1000}}},
    ]}
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run([str(BIN / "dora"), "run", "flow.yml"], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    line = next((ln for ln in text.splitlines() if "RECEIVED" in ln), None)
    assert line is not None, text[-3000:]
    got = json.loads(line.split("RECEIVED", 1)[1])
    assert [g[1] for g in got] == list(range(1, count + 1))  # every message, in order
    assert all(g[0] == size and g[3] == 1 for g in got)  # each whole and unmixed
