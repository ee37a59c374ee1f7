"""`dora run` for the CLI: a run that never starts its dataflow is stopped,
its node processes ended, and started again; a run that fails on its own is
not retried. The fake speaks dora 1.1.0's own lines (spawned node pids, the
start of the dataflow) and, when wedged, ignores Ctrl-C as dora then does."""

from __future__ import annotations

import io
import os
import re
import signal
import subprocess
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


TICKER = textwrap.dedent("""
    import pyarrow as pa
    from dora import Node
    node = Node()
    for i, event in enumerate(node):
        if event["type"] == "INPUT":
            node.send_output("count", pa.array([i], pa.int64()), {"seq": i})
""")
# a node that outlives every stop: only its end by pid takes it down
STUBBORN = textwrap.dedent("""
    import signal, time
    from dora import Node
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    node = Node()
    while True:
        node.next(0.5)
        time.sleep(0.05)
""")
REPO = Path(__file__).resolve().parents[2]


def _flow(tmp_path: Path) -> Path:
    (tmp_path / "ticker.py").write_text(TICKER)
    (tmp_path / "stubborn.py").write_text(STUBBORN)
    flow = tmp_path / "flow.yml"
    flow.write_text(textwrap.dedent(f"""
        nodes:
          - id: ticker
            path: ticker.py
            inputs: {{tick: dora/timer/millis/50}}
            outputs: [count]
          - id: stubborn
            path: stubborn.py
            inputs: {{count: ticker/count}}
          - id: recorder
            path: {REPO / "nodes" / "recording" / "recorder.py"}
            inputs:
              ticker__count: {{source: ticker/count, queue_policy: backpressure, queue_size: 1000}}
            outputs: [status, diagnostics]
    """))
    return flow


@pytest.mark.dataflow
def test_a_run_whose_recorder_is_killed_says_so_once_stops_and_leaves_no_node_running(tmp_path):
    flow = _flow(tmp_path)
    assert dora_process.recorder_node(flow) == "recorder"
    env = {k: v for k, v in os.environ.items() if k not in ("TELEDORA_RECORDER_GUARD", "DORA_LOG_LEVEL")}
    log = tmp_path / "cli.log"
    with open(log, "w") as f:
        # a short grace keeps the test short; the stubborn node needs the end by pid anyway
        code = ("import sys; from teledora.commands import _dora_process as d; d.RecorderGuard.grace_s = 3.0; "
                "from teledora.cli import main; sys.exit(main())")
        cli = subprocess.Popen([sys.executable, "-c", code, "run", str(flow), "--runs-dir", str(tmp_path / "runs")],
                               cwd=REPO, env=env, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 40
        while not list((tmp_path / "runs").glob("*/manifest.json")):
            assert cli.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.1)
        time.sleep(1.0)
        dora_log = next((tmp_path / "runs").glob("*/dora.log"))  # dora's own lines: the console only names the nodes
        pids = {m.group(1): int(m.group(2)) for m in dora_process.SPAWNED.finditer(dora_log.read_text())}
        assert set(pids) == {"ticker", "stubborn", "recorder"}
        os.kill(pids["recorder"], signal.SIGKILL)
        rc = cli.wait(timeout=40)
    finally:
        if cli.poll() is None:
            os.killpg(cli.pid, signal.SIGKILL)
            cli.wait()
    text = log.read_text()
    died = [line for line in text.splitlines() if "the recorder (recorder) died" in line]
    assert rc == dora_process.RECORDER_DIED_RC, text
    assert len(died) == 1 and "the robot holds and the run is being stopped" in died[0], text
    run_dir = next((tmp_path / "runs").iterdir())
    assert str(run_dir) in died[0]
    log_file = Path(re.search(r"its log: (\S+)", died[0]).group(1))
    assert log_file.is_file(), died[0]
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [name for name, p in pids.items() if _alive(p)], "node processes of the run were left running"


def test_recorder_node_finds_the_recorder_by_path_or_module(tmp_path):
    flow = tmp_path / "f.yml"
    flow.write_text("nodes:\n  - id: rec\n    path: python\n    args: -m teledora.nodes.recording.recorder\n  - id: x\n    path: x.py\n")
    assert dora_process.recorder_node(flow) == "rec"
    flow.write_text("nodes:\n  - id: x\n    path: x.py\n")
    assert dora_process.recorder_node(flow) is None
    assert dora_process.recorder_node(tmp_path / "missing.yml") is None


FAKE_DORA_RECORDER_DIES = textwrap.dedent("""
    import subprocess, sys, time
    rec = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    print(f"01:35:14 DEBUG  recorder: spawner spawned node with pid {rec.pid}", flush=True)
    print(f"01:35:14 DEBUG  arms: spawner spawned node with pid {other.pid}", flush=True)
    print("01:35:22 INFO   [dora]: daemon all nodes are ready, starting dataflow", flush=True)
    time.sleep(0.3)
    rec.kill()
    rec.wait()
    if sys.argv[1] == "quiet":  # dora says nothing: the vanished pid alone tells
        time.sleep(5)
    else:
        print("01:35:23 ERROR  recorder: daemon exited because of signal SIGKILL", flush=True)
        time.sleep(3)
    other.kill()
    print("01:35:30 INFO   [dora]: dataflow finished", flush=True)
""")


@pytest.mark.parametrize("how", ["said", "quiet"])
@pytest.mark.parametrize("guard", ["hold", "off"])
def test_a_dead_recorder_ends_the_run_unless_the_guard_is_off(tmp_path, monkeypatch, guard, how):
    monkeypatch.setattr(dora_process, "GONE_CONFIRM_S", 0.5)
    monkeypatch.setenv("TELEDORA_RECORDER_GUARD", guard)
    script = tmp_path / "fake.py"
    script.write_text(FAKE_DORA_RECORDER_DIES)
    out, said = io.StringIO(), []
    watch = dora_process.RecorderGuard("recorder", str(tmp_path / "run"), str(tmp_path / "out"), grace_s=0.5)
    rc = run_dora([sys.executable, str(script), how], dict(os.environ), out=out, say=said.append, recorder=watch)
    died = [s for s in said if "the recorder (recorder) died" in s]
    assert len(died) == 1
    assert ("signal SIGKILL" if how == "said" else "its process is gone") in died[0]
    if guard == "off":
        assert rc == 0 and "goes on UNRECORDED" in died[0]
        assert len(said) == 2 and "TELEDORA_RECORDER_GUARD=off" in said[0]  # once at the start, once at the death
        assert "dataflow finished" in out.getvalue()
    else:
        assert rc == dora_process.RECORDER_DIED_RC and said == died
        assert "dataflow finished" not in out.getvalue()  # stopped, not left to run on
        arms = int(re.search(r"arms: spawner spawned node with pid (\d+)", out.getvalue()).group(1))
        deadline = time.monotonic() + 5
        while _alive(arms) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(arms)
