"""Sim, hardware and distributed dataflows expose the same interface.

The comparison logic (teledora.operators.dataflow.dataflow_parity) is tested on small
descriptors first, then applied to the shipped dataflows.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from teledora.operators.dataflow.dataflow_parity import (
    SIM_ONLY_NODES,
    DataflowFormatError,
    compare_interfaces,
    dangling_inputs,
    machine_of,
    node_interfaces,
    undeployed_nodes,
)

REPO = Path(__file__).resolve().parents[2]
DATAFLOWS = REPO / "dataflows"
BIN = Path(sys.executable).parent

#: sim.yml nodes whose hardware variant does not exist yet, and why. Each entry
#: must really be absent from hardware.yml (checked below), so the list cannot go stale.
HARDWARE_PENDING = {
    "flow": "no companion-side driver for the optical-flow sensor yet; on the robot the sensor "
    "can feed the autopilot directly (FLOW_TYPE) and the ekf bridge reads EKF3's estimate",
}
#: The machine split of the issue: device nodes on the robot, the rest on the workstation.
ROBOT_NODES = {"arms", "base", "lift", "lidar_front", "lidar_back", "scan_merger", "flow", "ekf", "sim", "cameras"}
WORKSTATION_NODES = {"xr", "teleop", "episodes", "renderer", "recorder", "mocap"}
#: Where the sim split differs: the sim cameras render on the workstation (there are no USB
#: cameras to be near, and raw frames then stay off the link between the daemons).
SIM_ON_WORKSTATION = {"cameras"}


def _load(name: str) -> dict:
    return yaml.safe_load((DATAFLOWS / name).read_text())


def _node(node_id: str, outputs=(), types=None, inputs=None, machine=None) -> dict:
    entry = {"id": node_id, "path": f"{node_id}.py", "outputs": list(outputs), "output_types": dict(types or {}),
             "inputs": dict(inputs or {})}
    if machine:
        entry["deploy"] = {"machine": machine}
    return entry


# ------------------------------------------------------------------ the operator


def test_identical_graphs_match() -> None:
    graph = {"nodes": [_node("a", ["x", "diagnostics"], {"x": "t/X"}), _node("b", ["y"], inputs={"x": "a/x"})]}
    report = compare_interfaces(graph, graph)
    assert report.ok and report.problems() == []


def test_missing_extra_and_renamed_outputs_are_reported() -> None:
    ref = {"nodes": [_node("a", ["x", "diagnostics"]), _node("sim", ["truth"]), _node("b", ["y"])]}
    var = {"nodes": [_node("a", ["x2", "diagnostics"]), _node("c", ["z"])]}
    report = compare_interfaces(ref, var, reference_only={"sim": "physics"})
    assert report.missing == ["b"]
    assert report.extra == ["c"]
    assert report.output_mismatches == {"a": (["x"], ["x2"])}
    assert report.excused == {"sim": "physics"}
    assert not report.ok
    text = "\n".join(report.problems())
    assert "'b' is in the reference graph but not in the variant" in text and "['x2']" in text


def test_output_type_change_is_reported() -> None:
    ref = {"nodes": [_node("a", ["x"], {"x": "teledora/msgs/v1/JointState"})]}
    var = {"nodes": [_node("a", ["x"], {"x": "teledora/msgs/v1/JointCommands"})]}
    report = compare_interfaces(ref, var)
    assert report.type_mismatches == {"a/x": ("teledora/msgs/v1/JointState", "teledora/msgs/v1/JointCommands")}
    untyped = {"nodes": [_node("a", ["x"])]}
    assert compare_interfaces(ref, untyped).type_mismatches == {"a/x": ("teledora/msgs/v1/JointState", None)}


def test_dangling_inputs_and_deploy_helpers() -> None:
    graph = {"nodes": [
        _node("a", ["x"], inputs={"tick": "dora/timer/millis/10"}, machine="robot"),
        _node("b", ["y"], inputs={"x": {"source": "a/x"}, "gone": "sim/truth", "typo": "a/z"}),
    ]}
    assert dangling_inputs(graph) == ["b.gone <- sim/truth", "b.typo <- a/z"]
    assert undeployed_nodes(graph) == ["b"]
    assert machine_of(graph) == {"a": "robot", "b": None}


@pytest.mark.parametrize("bad, match", [
    ({}, "top-level 'nodes'"),
    ({"nodes": [{"path": "x.py"}]}, "no 'id'"),
    ({"nodes": [{"id": "a"}, {"id": "a"}]}, "appears twice"),
    ({"nodes": [{"id": "a", "outputs": "x"}]}, "must be a list"),
])
def test_malformed_descriptors_are_refused(bad, match) -> None:
    with pytest.raises(DataflowFormatError, match=match):
        node_interfaces(bad)


# ------------------------------------------------------------------ the shipped dataflows


def test_hardware_exposes_the_sim_interface() -> None:
    sim, hw = _load("sim.yml"), _load("hardware.yml")
    report = compare_interfaces(sim, hw, reference_only={**SIM_ONLY_NODES, **HARDWARE_PENDING})
    assert report.ok, "\n".join(report.problems())
    assert set(report.excused) == set(SIM_ONLY_NODES) | set(HARDWARE_PENDING)


def test_pending_hardware_nodes_are_really_absent_and_sim_only_nodes_exist() -> None:
    sim, hw = node_interfaces(_load("sim.yml")), node_interfaces(_load("hardware.yml"))
    for node_id in [*SIM_ONLY_NODES, *HARDWARE_PENDING]:
        assert node_id in sim, f"{node_id} is documented as sim-only/pending but sim.yml lacks it"
        assert node_id not in hw, f"{node_id} now has a hardware node: remove it from the documented list"


def test_hardware_graph_is_closed_and_fed_by_real_states() -> None:
    hw = _load("hardware.yml")
    assert dangling_inputs(hw) == []
    nodes = node_interfaces(hw)
    assert not any(src.startswith("sim/") for n in nodes.values() for src in n.inputs.values())
    assert nodes["renderer"].inputs["joint_states"] == "arms/joint_states"
    assert nodes["renderer"].inputs["odom"] == "base/odom"


def test_hardware_uses_the_hardware_variants() -> None:
    expected = {"xr": "xr.xr_webxr", "arms": "drive.arms_feetech", "base": "drive.base_feetech",
                "lift": "drive.lift_feetech", "lidar_front": "lidar.lidar_rplidar", "lidar_back": "lidar.lidar_rplidar",
                "ekf": "estimation.ekf_ardupilot", "mocap": "mocap.mocap_natnet"}
    entries = {n["id"]: n for n in _load("hardware.yml")["nodes"]}
    for node_id, module in expected.items():
        args = entries[node_id].get("args", "")
        assert re.match(rf"-m teledora\.nodes\.{re.escape(module)}(\s|$)", args), (node_id, args)


@pytest.mark.parametrize("name", ["hardware.yml", "sim_distributed.yml"])
def test_two_machine_split(name: str) -> None:
    graph = _load(name)
    assert undeployed_nodes(graph) == []
    placement = machine_of(graph)
    assert set(placement.values()) == {"robot", "workstation"}
    robot = ROBOT_NODES - SIM_ON_WORKSTATION if name == "sim_distributed.yml" else ROBOT_NODES
    workstation = WORKSTATION_NODES | (SIM_ON_WORKSTATION if name == "sim_distributed.yml" else set())
    for node_id, machine in placement.items():
        if node_id in robot:
            assert machine == "robot", node_id
        else:
            assert node_id in workstation and machine == "workstation", node_id


def test_sim_distributed_is_sim_yml_plus_deploy() -> None:
    """Same nodes, input sources, env, outputs and types as sim.yml; only the start
    command and deploy differ (queue tuning may lag behind sim.yml)."""
    sim = {n["id"]: n for n in _load("sim.yml")["nodes"]}
    dist = {n["id"]: n for n in _load("sim_distributed.yml")["nodes"]}
    assert list(dist) == list(sim)
    for node_id, s in sim.items():
        d = dist[node_id]
        module = ".".join(Path(s["path"]).with_suffix("").parts[-2:])
        assert d["path"] == "python"
        assert d["args"].split() == ["-m", f"teledora.nodes.{module}", *str(s.get("args", "")).split()], node_id
        for key in ("input_types", "outputs", "output_types", "env"):
            assert d.get(key) == s.get(key), f"sim.yml changed ({node_id}.{key}): copy it into sim_distributed.yml"
        sources = node_interfaces({"nodes": [s]})[node_id].inputs
        assert node_interfaces({"nodes": [d]})[node_id].inputs == sources, f"sim.yml changed ({node_id}.inputs)"
        assert set(d) - set(s) - {"args"} == {"deploy"}, node_id
        assert set(s) - set(d) == set(), node_id


@pytest.mark.parametrize("name", ["hardware.yml", "sim_distributed.yml"])
def test_dora_validates_with_strict_types(name: str) -> None:
    out = subprocess.run([str(BIN / "dora"), "validate", "--strict-types", f"dataflows/{name}"], cwd=REPO,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "All type annotations OK" in out.stdout


def test_cluster_file_names_the_deploy_machines() -> None:
    cluster = _load("cluster.yml")
    assert set(cluster) <= {"coordinator", "machines", "zenoh_peer"}
    assert set(cluster["coordinator"]) <= {"addr", "port"}
    ids = [m["id"] for m in cluster["machines"]]
    assert sorted(ids) == ["robot", "workstation"]
    for m in cluster["machines"]:
        assert set(m) <= {"id", "host", "user", "labels"} and m["host"]
    assert set(machine_of(_load("hardware.yml")).values()) == set(ids)
