"""`teledora demo` as a new user sees it: a short console, all of dora's
output in the run's log file; `--view` leaves no temporary dataflow behind."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from teledora.cli import main
from teledora.commands import demo

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
MAX_LINES = 40


@pytest.mark.dataflow
def test_a_shortened_demo_prints_a_few_lines_and_logs_everything(tmp_path):
    # as in tests/dataflows/test_sim_dataflow.py: the recorder guard's bounds widened for a loaded machine
    env = dict(os.environ, MUJOCO_GL="egl", TELEDORA_RECORDER_MAX_LAG_S="120", TELEDORA_RECORDER_TIMEOUT_S="60")
    proc = subprocess.run([str(BIN / "teledora"), "demo", "--stop-after", "25s", "--runs-dir", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, env=env)
    console = proc.stdout + proc.stderr
    assert proc.returncode == 0, console[-4000:]
    lines = console.splitlines()
    assert len(lines) <= MAX_LINES, console
    assert "\x1b" not in console
    nodes = len(yaml.safe_load((REPO / "dataflows" / "sim.yml").read_text())["nodes"])
    assert len([line for line in lines if re.fullmatch(r"\S+ started \(pid \d+\)", line)]) == nodes
    run_dir = Path(re.search(r"recording in (\S+)", proc.stdout).group(1))
    log = Path(re.search(r"complete output .*: (\S+)$", proc.stdout, re.M).group(1))
    assert log == run_dir / "dora.log" and log.is_file()
    text = log.read_text()
    assert text.count("spawner spawned node with pid") == nodes
    assert "all nodes are ready, starting dataflow" in text
    assert len(text.splitlines()) > len(lines)
    assert "\x1b" not in text


def test_view_removes_its_temporary_dataflow_and_keeps_dora_s_node_logs(tmp_path, monkeypatch):
    pytest.importorskip("rerun", reason="rerun-sdk is not installed (pip install -e '.[view]')")
    seen = {}

    def fake_run_dora(cmd, env, **kwargs):
        flow = Path(cmd[2])
        seen["flow"] = flow
        seen["existed"] = flow.is_file()
        (flow.parent / "out" / "some-id").mkdir(parents=True)
        (flow.parent / "out" / "some-id" / "log_recorder.jsonl").write_text("{}\n")
        return 0

    monkeypatch.setattr(demo, "run_dora", fake_run_dora)
    monkeypatch.chdir(REPO)
    assert main(["demo", "--view", "--runs-dir", str(tmp_path)]) == 0
    assert seen["existed"] and seen["flow"].parent.name.startswith("teledora-view-")
    assert Path(tempfile.gettempdir()) in seen["flow"].parents
    assert not seen["flow"].parent.exists()
    run_dir = next(tmp_path.iterdir())
    assert (run_dir / demo.DORA_LOGS / "some-id" / "log_recorder.jsonl").is_file()
