"""The dependency rules in pyproject.toml ([tool.importlinter]) hold: `lint-imports`.

The source tree maps operators/, nodes/ and models/ into the teledora namespace
with setuptools' package-dir, which import-linter cannot follow in an editable
install. The test lays the namespace out as it is installed (Python files only)
in a temporary folder and runs `lint-imports` there with the repository's
contracts.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# installed package -> source folder (pyproject.toml [tool.setuptools] package-dir)
NAMESPACE = {"teledora": "teledora", "teledora/operators": "operators", "teledora/nodes": "nodes",
             "teledora/models": "models"}


def _lay_out_namespace(dest: Path) -> None:
    for installed, source in NAMESPACE.items():
        for src in (REPO / source).rglob("*.py"):
            rel = src.relative_to(REPO / source)
            if rel.parts[0] in ("operators", "nodes", "models") and source == "teledora":
                continue
            target = dest / installed / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)


def test_import_contracts_hold(tmp_path: Path) -> None:
    if not LINT_IMPORTS.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    _lay_out_namespace(tmp_path)
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    proc = subprocess.run([str(LINT_IMPORTS), "--config", "pyproject.toml", "--no-cache"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


def test_the_contracts_catch_a_node_importing_another_node(tmp_path: Path) -> None:
    """The independence contract is not vacuous: one node importing another breaks it."""
    if not LINT_IMPORTS.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    _lay_out_namespace(tmp_path)
    shutil.copyfile(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    victim = tmp_path / "teledora" / "nodes" / "lidar" / "scan_merger.py"
    victim.write_text(victim.read_text() + "\nfrom teledora.nodes.drive import base_sim  # noqa\n")
    proc = subprocess.run([str(LINT_IMPORTS), "--config", "pyproject.toml", "--no-cache"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert "A node never imports another node BROKEN" in proc.stdout
