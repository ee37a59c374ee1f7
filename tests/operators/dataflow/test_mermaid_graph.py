"""The architecture page's graph is generated from the dataflow and kept current."""

from __future__ import annotations

from pathlib import Path

import pytest

from teledora.commands.graph import dataflow_mermaid
from teledora.operators.dataflow.mermaid_graph import BEGIN, END, replace_block, trim_mermaid

REPO = Path(__file__).resolve().parents[3]

SAMPLE = """flowchart TB
  ik["**ik**"]
  recorder["**recorder**"]
  teleop -- arm_targets [ArmTargets] --> ik
  ik -- joint_commands as ik__joint_commands [JointCommands] --> recorder
  ik -- diagnostics [Diagnostics] --> monitor
"""


def test_trim_drops_recorder_and_diagnostics_edges() -> None:
    out = trim_mermaid(SAMPLE)
    assert "recorder" not in out and "diagnostics" not in out
    assert "teleop -- arm_targets [ArmTargets] --> ik" in out


def test_replace_block_needs_markers() -> None:
    doc = f"a\n{BEGIN}\nold\n{END}\nb"
    assert replace_block(doc, "new\n") == f"a\n{BEGIN}\n```mermaid\nnew\n```\n{END}\nb"
    with pytest.raises(ValueError):
        replace_block("no markers", "x")


def test_architecture_doc_shows_the_current_sim_graph() -> None:
    doc = (REPO / "docs" / "architecture.md").read_text()
    expected = replace_block(doc, dataflow_mermaid(REPO / "dataflows" / "sim.yml"))
    assert doc == expected, "run `teledora graph --write docs/architecture.md`"
