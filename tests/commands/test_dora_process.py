"""`dora run` for the CLI: a run that never starts its dataflow is stopped,
its node processes ended, and started again; a run that fails on its own is
not retried. The fake speaks dora 1.1.0's own lines (spawned node pids, the
start of the dataflow) and, when wedged, ignores Ctrl-C as dora then does."""

from __future__ import annotations

import io
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from teledora.commands import _dora_process as dora_process
from teledora.commands._dora_process import run_dora

FAKE_DORA = textwrap.dedent("""
    import os, signal, subprocess, sys, time
    count_file, mode = sys.argv[1], sys.argv[2]
    n = int(open(count_file).read()) + 1 if os.path.exists(count_file) else 1
    open(count_file, "w").write(str(n))
    if mode == "fail":
        print("[dora]: node `ik` failed: exited with code 3", flush=True)
        sys.exit(3)
    node = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(f"01:35:14 DEBUG  ik: spawner spawned node with pid {node.pid}", flush=True)
    open(count_file + f".pid{n}", "w").write(str(node.pid))
    if mode == "wedge" or (mode == "wedge-once" and n == 1):
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a wedged dora outlives Ctrl-C
        time.sleep(600)
    if mode == "slow":
        time.sleep(1.5)
    print("01:35:22 INFO   [dora]: daemon all nodes are ready, starting dataflow", flush=True)
    print("ik: running", flush=True)
    node.kill()
    node.wait()
""")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def fake(tmp_path, monkeypatch):
    monkeypatch.setattr(dora_process, "STOP_WAIT_S", 0.5)
    script = tmp_path / "fake_dora.py"
    script.write_text(FAKE_DORA)
    count = tmp_path / "count"

    def run(mode: str, env: dict | None = None, **kwargs):
        out, said = io.StringIO(), []
        rc = run_dora([sys.executable, str(script), str(count), mode], {**os.environ, **(env or {})}, out=out,
                      say=said.append, **kwargs)
        attempts = int(count.read_text())
        pids = [int((tmp_path / f"count.pid{k}").read_text()) for k in range(1, attempts + 1)
                if (tmp_path / f"count.pid{k}").exists()]
        return rc, out.getvalue(), said, attempts, pids

    return run


def test_a_run_that_never_starts_is_stopped_its_nodes_ended_and_started_again(fake):
    rc, out, said, attempts, pids = fake("wedge-once", startup_timeout_s=1.0)
    assert rc == 0 and attempts == 2
    assert "ik: running" in out  # the second run's output is echoed
    assert len(said) == 1 and "did not start the dataflow within 1 s" in said[0] and "starting it again" in said[0]
    deadline = time.monotonic() + 5
    while _alive(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pids[0]), "the wedged run's node process was left running"


def test_a_run_that_never_starts_is_given_up_after_its_attempts(fake):
    rc, _, said, attempts, pids = fake("wedge", startup_timeout_s=0.5, attempts=2)
    assert rc == 1 and attempts == 2
    assert "giving up" in said[-1]
    time.sleep(0.2)
    assert not any(_alive(p) for p in pids)


def test_a_run_that_fails_on_its_own_is_not_retried(fake):
    rc, out, said, attempts, _ = fake("fail", startup_timeout_s=5.0)
    assert rc == 3 and attempts == 1 and said == []
    assert "exited with code 3" in out


def test_a_run_that_starts_is_left_to_end(fake):
    rc, out, said, attempts, _ = fake("start", startup_timeout_s=5.0)
    assert rc == 0 and attempts == 1 and said == []
    assert "all nodes are ready" in out and out.endswith("ik: running\n")


def test_a_slow_start_is_stopped_unless_dora_is_told_not_to_print_it(fake, tmp_path):
    rc, _, said, attempts, _ = fake("slow", startup_timeout_s=0.5, attempts=1)
    assert rc == 1 and attempts == 1 and "giving up" in said[0]
    (tmp_path / "count").unlink()
    rc, out, said, attempts, _ = fake("slow", env={"DORA_LOG_LEVEL": "warn"}, startup_timeout_s=0.5)
    assert rc == 0 and attempts == 1 and said == [] and "ik: running" in out


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError):
        run_dora(["true"], {}, attempts=0)
    with pytest.raises(ValueError):
        run_dora(["true"], {}, startup_timeout_s=0)
