"""The sim dataflow split over two dora daemons (`robot`, `workstation`) and a coordinator.

Everything runs on this host: the test starts its own coordinator (in-memory
store, a free port) and two daemons with their own working directories, starts
dataflows/sim_distributed.yml with ``dora start --detach``, waits until the
recorder (on `workstation`) has written topics produced on `robot`, then
``dora stop`` / ``dora destroy``. Only the processes this test started are
ended, by pid.

Messages must cross in both directions: robot topics (arms, base, lift, sim)
are recorded on the workstation, and the robot's arms and base act on the
workstation's ik and teleop commands (servo targets sent, wheels driven).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from teledora.operators.dataflow.dataflow_parity import machine_of
from teledora.operators.contract.messages import decode
from teledora.recording import RunReader

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DATAFLOW = REPO / "dataflows" / "sim_distributed.yml"
ROBOT_TOPICS = ["arms__joint_states", "arms__servo_targets", "base__odom", "base__wheel_commands", "lift__state", "sim__ground_truth"]
START_DEADLINE_S = 60.0  # 15 Python nodes importing MuJoCo on 2 cores take ~30 s to start


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(run_dir: Path, topic: str) -> int:
    path = run_dir / f"{topic}.arrow"
    if not path.exists():
        return 0
    try:
        import pyarrow.ipc as ipc

        with ipc.open_stream(path) as reader:
            return sum(batch.num_rows for batch in reader)
    except Exception:  # a batch still being written
        return 0


class LocalCluster:
    """A coordinator and two daemons on 127.0.0.1, owned by one test."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.port = _free_port()
        self.env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", MUJOCO_GL="egl",
                        RUST_BACKTRACE="0", DORA_COORDINATOR_PORT=str(self.port))
        self.procs: list[subprocess.Popen] = []

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        cwd = self.root / name
        cwd.mkdir(parents=True, exist_ok=True)
        log = open(self.root / f"{name}.log", "wb")
        proc = subprocess.Popen([str(BIN / "dora"), *args], cwd=cwd, env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs.append(proc)
        return proc

    def up(self) -> None:
        self._spawn("coordinator", ["coordinator", "--port", str(self.port), "--store", "memory", "--quiet"])
        self._wait_port(self.port)
        for machine in ("robot", "workstation"):
            self._spawn(machine, ["daemon", "--machine-id", machine, "--coordinator-port", str(self.port),
                                  "--local-listen-port", str(_free_port()), "--zenoh-no-multicast"])
        connected = self._wait_for(lambda: self.connected_machines() >= {"robot", "workstation"}, 30.0)
        assert connected, f"daemons did not register with the coordinator\n{self.logs()}"

    def connected_machines(self) -> set[str]:
        """Machine ids of the daemons the coordinator lists (``<machine>-<uuid>``)."""
        rows = self.dora("cluster", "status", timeout=20).stdout.splitlines()
        return {line.split()[0].rsplit("-", 5)[0] for line in rows[1:] if line.strip() and not line.startswith("Active")}

    def dora(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "dora"), *args], cwd=REPO, env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def _wait_port(self, port: int, timeout_s: float = 20.0) -> None:
        def listening() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0
        self._wait_for(listening, timeout_s)

    @staticmethod
    def _wait_for(predicate, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.2)
        return False

    def down(self) -> None:
        try:
            self.dora("destroy", "--force", timeout=30)
        except subprocess.TimeoutExpired:
            pass
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:  # the daemon's session holds the nodes it spawned
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in reversed(self.procs):
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(self.root.glob("*.log")))


# what the dora CLI says when a daemon's answer comes later than it waits
REPLY_TIMEOUT = "timeout waiting for daemon"


def _running(listed: str) -> bool:
    """Whether `dora list` output shows the test's dataflow running."""
    return "am2-distributed" in listed and "Running" in listed


@pytest.fixture(scope="module")
def distributed_run(tmp_path_factory):
    if shutil.which("dora", path=str(BIN)) is None:
        pytest.skip("dora CLI not installed in this environment")
    root = tmp_path_factory.mktemp("cluster")
    run_dir = root / "run"
    # the demo script, held idle at its end far beyond the test, so the dataflow
    # is still running when the test stops it (it would otherwise end by itself)
    from teledora import models
    script = models.load_yaml("alohamini2/demo_script.yaml")
    script["keyframes"].append({"t_s": 600.0})
    script_path = root / "long_demo_script.yaml"
    script_path.write_text(yaml.safe_dump(script))
    cluster = LocalCluster(root)
    try:
        cluster.up()
        started = cluster.dora("start", str(DATAFLOW), "--name", "am2-distributed", "--detach",
                               "--env", f"TELEDORA_RUN_DIR={run_dir}", "--env", f"TELEDORA_XR_SCRIPT={script_path}",
                               # control across daemons is checked, not the recorder's pace on a loaded
                               # machine: the recorder guard's bounds are widened (docs/recording.md)
                               "--env", "TELEDORA_RECORDER_MAX_LAG_S=120", "--env", "TELEDORA_RECORDER_TIMEOUT_S=60")
        assert started.returncode == 0, started.stdout + started.stderr + cluster.logs()
        crossed = cluster._wait_for(lambda: all(_rows(run_dir, t) >= 5 for t in ROBOT_TOPICS), START_DEADLINE_S)
        lift_log = subprocess.CompletedProcess([], 1, "", "")
        deadline = time.monotonic() + 20.0  # the lift logs once homed (~1.5 s after its first state)
        while time.monotonic() < deadline and "lift homed" not in lift_log.stdout + lift_log.stderr:
            try:
                lift_log = cluster.dora("logs", "am2-distributed", "--node", "lift", timeout=10)
            except subprocess.TimeoutExpired as exc:
                lift_log = subprocess.CompletedProcess(exc.cmd, 124, str(exc.stdout or ""), str(exc.stderr or ""))
            time.sleep(0.5)
        stops = [cluster.dora("stop", "--name", "am2-distributed", "--grace-duration", "10s", timeout=40)]
        # on a loaded machine a daemon can answer the CLI after the CLI's own reply
        # timeout: the stop went out, its answer did not come back in time. While
        # the dataflow still runs the stop is asked again, as an operator would.
        while (len(stops) < 3 and stops[-1].returncode != 0 and REPLY_TIMEOUT in stops[-1].stdout + stops[-1].stderr
               and _running(cluster.dora("list").stdout)):
            stops.append(cluster.dora("stop", "--name", "am2-distributed", "--grace-duration", "10s", timeout=40))
        listed = cluster.dora("list")
        yield {"root": root, "run_dir": run_dir, "crossed": crossed, "start": started, "stops": stops,
               "list": listed, "lift_log": lift_log, "logs": cluster.logs()}
    finally:
        cluster.down()


def test_robot_topics_were_recorded_on_the_workstation(distributed_run) -> None:
    run_dir = distributed_run["run_dir"]
    assert distributed_run["crossed"], (
        {t: _rows(run_dir, t) for t in ROBOT_TOPICS}, distributed_run["start"].stdout[-3000:], distributed_run["logs"]
    )
    reader = RunReader(run_dir)
    for topic in ROBOT_TOPICS:
        assert reader.read_topic(topic).table.num_rows >= 5, topic


def test_each_node_ran_on_the_daemon_its_deploy_names(distributed_run) -> None:
    placement = machine_of(yaml.safe_load(DATAFLOW.read_text()))
    root = distributed_run["root"]
    for node, machine in placement.items():
        other = "workstation" if machine == "robot" else "robot"
        assert list((root / machine).rglob(f"log_{node}.jsonl")), f"{node} has no log under daemon {machine}"
        assert not list((root / other).rglob(f"log_{node}.jsonl")), f"{node} also ran under daemon {other}"


def test_robot_nodes_acted_on_workstation_commands(distributed_run) -> None:
    reader = RunReader(distributed_run["run_dir"])
    # arms (robot) only sends servo targets for joint commands from ik (workstation)
    assert reader.read_topic("arms__servo_targets").table.num_rows >= 5
    # base (robot) turns teleop's base_cmd (workstation) into wheel goals; the demo drives forward early on
    wheels = [decode("WheelCommands", m.value) for m in reader.iter_topic("base__wheel_commands")]
    commands = [decode("BaseCommand", m.value) for m in reader.iter_topic("teleop__base_cmd")]
    assert commands, "teleop sent no base_cmd"
    moving = [c for c in commands if abs(c["forward_m_s"]) + abs(c["left_m_s"]) + abs(c["yaw_rad_s"]) > 0]
    if moving:
        assert any(w["left"] or w["back"] or w["right"] for w in wheels), "base never drove while teleop asked it to"


def test_dora_stop_ends_the_dataflow(distributed_run) -> None:
    stops = distributed_run["stops"]
    said = [s.stdout + s.stderr for s in stops]
    print(f"dora stop asked {len(stops)} time(s)")
    # each failed answer is the CLI's reply timeout, never another error, and the last one succeeded
    # or found the dataflow already stopped
    assert all(REPLY_TIMEOUT in text for s, text in zip(stops, said) if s.returncode != 0), said
    listed = distributed_run["list"].stdout
    assert not _running(listed), listed
    assert stops[-1].returncode == 0 or len(stops) < 3, said
    assert RunReader(distributed_run["run_dir"]).complete  # the recorder closed its run on STOP


def test_dora_logs_reaches_a_node_on_the_robot_daemon(distributed_run) -> None:
    log = distributed_run["lift_log"]
    assert "lift homed" in log.stdout + log.stderr, (log.returncode, log.stdout[-2000:], log.stderr[-2000:])
