"""The CPU benchmark's dataflow copy: a variant changes one node's env and nothing else."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from stack_cpu import build_dataflow, parse_node_env  # noqa: E402


def test_a_node_env_override_merges_into_that_node_only(tmp_path):
    shipped = {n["id"]: n for n in yaml.safe_load((REPO / "dataflows" / "sim.yml").read_text())["nodes"]}
    _, flow = build_dataflow(tmp_path, tmp_path / "probe.jsonl", False, ["ekf:TELEDORA_BATCH_SPACING_S=0", "ekf:EXTRA=1"])
    nodes = {n["id"]: n for n in flow["nodes"]}
    assert nodes["ekf"]["env"] == {**shipped["ekf"]["env"], "TELEDORA_BATCH_SPACING_S": "0", "EXTRA": "1"}
    for node_id in shipped:
        if node_id != "ekf" and node_id in nodes:
            assert nodes[node_id].get("env") == shipped[node_id].get("env"), node_id
    assert {"echo", "probe"} <= set(nodes)


@pytest.mark.parametrize("item, message", [
    ("ekf-TELEDORA=1", "NODE:KEY=VALUE"),
    ("ekf:=1", "NODE:KEY=VALUE"),
    ("nobody:KEY=1", "no node 'nobody'"),
])
def test_a_bad_node_env_item_is_refused_clearly(item, message):
    with pytest.raises(ValueError, match=message):
        parse_node_env([item], {"ekf", "flow"})
