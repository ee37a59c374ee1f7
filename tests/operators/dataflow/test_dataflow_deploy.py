"""sim_distributed.yml is sim.yml, distributed by rule: generated, never hand-copied."""

from __future__ import annotations

from pathlib import Path

import pytest

from teledora.commands.deploy import split_text
from teledora.operators.dataflow.dataflow_deploy import DeployError, distribute

REPO = Path(__file__).resolve().parents[3]


def test_committed_distributed_dataflow_is_the_generated_one() -> None:
    expected = split_text((REPO / "dataflows" / "sim.yml").read_text())
    assert (REPO / "dataflows" / "sim_distributed.yml").read_text() == expected, "run `teledora deploy split`"


def test_nodes_become_modules_with_their_args_and_keep_everything_else() -> None:
    flow = {"nodes": [{"id": "lidar_front", "path": "../nodes/lidar/lidar_sim.py", "args": "--lidar front",
                       "inputs": {"ground_truth": "sim/ground_truth"}, "outputs": ["scan"]}]}
    (node,) = distribute(flow, {"lidar_front": "robot"})["nodes"]
    assert node["path"] == "python" and node["args"] == "-m teledora.nodes.lidar.lidar_sim --lidar front"
    assert node["deploy"] == {"machine": "robot"}
    assert node["inputs"] == {"ground_truth": "sim/ground_truth"} and node["outputs"] == ["scan"]
    assert flow["nodes"][0]["path"] == "../nodes/lidar/lidar_sim.py"  # the input is not modified


@pytest.mark.parametrize(
    "flow, placement, match",
    [
        ({"nodes": [{"id": "a", "path": "../nodes/x/a.py"}]}, {}, "no machine"),
        ({"nodes": [{"id": "a", "path": "other/a.py"}]}, {"a": "robot"}, "nodes/<subsystem>/<name>.py"),
    ],
)
def test_unplaceable_nodes_are_refused(flow, placement, match) -> None:
    with pytest.raises(DeployError, match=match):
        distribute(flow, placement)
