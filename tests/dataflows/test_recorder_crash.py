"""kill -9 mid-run, of the recorder and of `dora run`: the run reads back
clean up to its torn end, and a dead recorder latches the robot's safe stop.

The loss in seconds per topic is printed (``-s`` shows it), not asserted: it
is a timing figure of a loaded machine; benchmarks/recorder_crash.py
measures it (docs/recording.md)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from teledora.recording import RunReader
from teledora.recording.run_check import check_run

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO / "benchmarks"))
from recorder_crash import recorder_pid  # noqa: E402


def crash(tmp_path: Path, victim: str) -> tuple[Path, str, int]:
    run = tmp_path / "run"
    env = dict(os.environ, MUJOCO_GL="egl", TELEDORA_RUN_DIR=str(run))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    log_path = tmp_path / "dora.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(BIN / "dora"), "run", str(REPO / "dataflows" / "sim.yml")], cwd=REPO, env=env,
                                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            deadline = time.time() + 240
            while not (run / "manifest.json").exists():
                assert proc.poll() is None and time.time() < deadline, "the recorder never started"
                time.sleep(0.1)
            time.sleep(6.0)
            pid = recorder_pid(proc.pid) if victim == "recorder" else proc.pid
            assert pid is not None
            kill_ns = time.time_ns()
            os.kill(pid, signal.SIGKILL)
            time.sleep(4.0)
            if victim == "recorder":
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    pass
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    return run, log_path.read_text(errors="replace"), kill_ns


def print_loss(run: Path, kill_ns: int) -> None:
    reader = RunReader(run)
    for topic in reader.topics:
        table = reader.read_topic(topic).table
        if table.num_rows:
            last = max(table.column("dora_ns").to_pylist())
            print(f"{topic}: {(kill_ns - last) / 1e9:.3f} s since its last recorded send at the kill")


def test_kill_9_of_the_recorder_reads_back_clean_and_latches_the_safe_stop(tmp_path):
    run, log, kill_ns = crash(tmp_path, "recorder")
    report = check_run(run)
    assert not report.complete
    assert report.ok, report.problems
    assert all(t.rows > 0 for t in report.topics.values() if t.manifest_count)
    for node in ("arms", "base", "lift"):
        assert f"{node}: SAFE STOP, robot holds: the recorder's status stream ended" in log, node
    print_loss(run, kill_ns)


def test_kill_9_of_dora_run_reads_back_clean(tmp_path):
    run, _, kill_ns = crash(tmp_path, "dora")
    report = check_run(run)
    assert report.ok, report.problems
    assert sum(t.rows for t in report.topics.values()) > 0
    print_loss(run, kill_ns)
