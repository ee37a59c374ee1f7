"""`--view`: the viewer node added to a copy of a dataflow, never to the shipped files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from teledora.commands.demo import add_viewer
from teledora.operators.dataflow.dataflow_parity import (
    SIM_ONLY_NODES,
    compare_interfaces,
    dangling_inputs,
    machine_of,
    node_interfaces,
)
from teledora.operators.dataflow.viewer_node import QUEUE_SIZE, VIEWER_ID, viewed_kind, with_viewer
from teledora.operators.errors import ConfigError

REPO = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
SHIPPED = ("sim.yml", "hardware.yml", "sim_distributed.yml")


def load(name: str) -> dict:
    return yaml.safe_load((REPO / "dataflows" / name).read_text())


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_dataflows_do_not_contain_the_viewer(name: str) -> None:
    assert VIEWER_ID not in node_interfaces(load(name))
    assert "viewing" not in (REPO / "dataflows" / name).read_text()


def test_the_viewer_listens_latest_only_to_every_shown_output() -> None:
    sim = load("sim.yml")
    out = with_viewer(sim, "/repo/dataflows", "/repo/nodes/viewing/viewer.py")
    viewer = node_interfaces(out)[VIEWER_ID]
    entry = out["nodes"][-1]
    assert entry["path"] == "/repo/nodes/viewing/viewer.py" and "deploy" not in entry
    expected = {f"{n}__{o}" for n, iface in node_interfaces(sim).items() if n != "recorder"
                for o in iface.outputs if viewed_kind(iface.output_types.get(o, "")) is not None}
    assert set(viewer.inputs) == expected
    assert {"arms__joint_states", "lidar_front__scan", "scan_merger__scan", "ekf__pose", "mocap__pose",
            "sim__ground_truth", "cameras__chest", "teleop__arm_targets", "xr__diagnostics"} <= expected
    assert not [i for i in expected if i.startswith("recorder__") or "journal" in i or "controllers" in i]
    for spec in entry["inputs"].values():
        assert spec["queue_size"] == QUEUE_SIZE and "queue_policy" not in spec  # dora's drop policy, never backpressure
    assert entry["min_log_level"] == "error"
    # file paths made absolute, everything else as it was
    assert out["nodes"][0]["path"] == "/repo/nodes/xr/xr_scripted.py"
    assert [n["id"] for n in out["nodes"][:-1]] == [n["id"] for n in sim["nodes"]]
    assert load("sim.yml") == sim, "the parsed input was changed"


def test_augmented_dataflows_pass_the_dataflow_checks() -> None:
    for name in SHIPPED:
        graph = load(name)
        out = with_viewer(graph, "/repo/dataflows", None)
        assert dangling_inputs(out) == []
        report = compare_interfaces(graph, out)
        assert report.extra == [VIEWER_ID] and not report.missing and not report.output_mismatches
    hw = with_viewer(load("hardware.yml"), "/repo/dataflows", None)
    assert machine_of(hw)[VIEWER_ID] == "workstation"
    assert hw["nodes"][-1]["args"] == "-m teledora.nodes.viewing.viewer"
    sim_vs_hw = compare_interfaces(with_viewer(load("sim.yml"), "/r", None), hw,
                                   reference_only={**SIM_ONLY_NODES, "flow": "no hardware flow node yet"})
    assert not sim_vs_hw.missing and not sim_vs_hw.extra


def test_a_second_viewer_is_refused() -> None:
    once = with_viewer(load("sim.yml"), "/r", None)
    with pytest.raises(ConfigError, match="already has a node 'viewer'"):
        with_viewer(once, "/r", None)


@pytest.mark.parametrize("name", ["sim.yml", "hardware.yml"])
def test_written_copy_validates_with_strict_types(name: str, tmp_path: Path) -> None:
    before = (REPO / "dataflows" / name).read_bytes()
    out = add_viewer(REPO / "dataflows" / name, tmp_path)
    assert (REPO / "dataflows" / name).read_bytes() == before
    result = subprocess.run([str(BIN / "dora"), "validate", "--strict-types", str(out)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "All type annotations OK" in result.stdout
    if name == "sim.yml":
        viewer = yaml.safe_load(out.read_text())["nodes"][-1]
        assert Path(viewer["path"]) == REPO / "nodes" / "viewing" / "viewer.py"


def test_view_without_rerun_says_how_to_install(tmp_path: Path, monkeypatch, capsys) -> None:
    from teledora.cli import main

    monkeypatch.chdir(REPO)
    monkeypatch.setitem(sys.modules, "rerun", None)  # import rerun -> ImportError
    assert main(["demo", "--view", "--runs-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "pip install -e '.[view]'" in err
    assert main(["view", str(tmp_path)]) == 2
    assert "pip install -e '.[view]'" in capsys.readouterr().err
