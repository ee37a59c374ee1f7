"""The dora type file in dataflows/ is the contract, rendered."""

from __future__ import annotations

from pathlib import Path

from teledora.operators.contract.dataflow_types import render_types_yaml, type_urn

REPO = Path(__file__).resolve().parents[3]


def test_committed_type_file_matches_the_contract() -> None:
    committed = (REPO / "dataflows" / "types" / "teledora" / "msgs" / "v1.yml").read_text()
    assert committed == render_types_yaml(), "run `teledora contract types` and commit the result"


def test_type_urns() -> None:
    assert type_urn("JointState") == "teledora/msgs/v1/JointState"
    assert type_urn("Image") == "std/media/v1/Image"
