"""`pip install .` (not only editable) works: the wheel carries one namespace and the models."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel_names(tmp_path_factory) -> list[str]:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        check=True, timeout=300, capture_output=True,
    )
    (wheel,) = out.glob("teledora-*.whl")
    with zipfile.ZipFile(wheel) as z:
        return z.namelist()


def test_only_the_teledora_namespace_is_installed(wheel_names) -> None:
    top = {n.split("/")[0] for n in wheel_names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"teledora"}


def test_operators_nodes_and_models_land_under_teledora(wheel_names) -> None:
    for name in (
        "teledora/operators/contract/messages.py",
        "teledora/nodes/sim/sim.py",
        "teledora/cli.py",
        "teledora/models/alohamini2/alohamini2.xml",
        "teledora/models/alohamini2/scene.xml",
        "teledora/models/alohamini2/profile.yaml",
        "teledora/models/alohamini2/demo_script.yaml",
        "teledora/nodes/xr/web/index.html",
    ):
        assert name in wheel_names, name


def test_every_shipped_model_file_is_in_the_wheel(wheel_names) -> None:
    shipped = {f"teledora/models/{p.relative_to(REPO / 'models').as_posix()}" for p in (REPO / "models").rglob("*")
               if p.is_file() and p.suffix in (".xml", ".yaml") }
    assert shipped <= set(wheel_names), sorted(shipped - set(wheel_names))
