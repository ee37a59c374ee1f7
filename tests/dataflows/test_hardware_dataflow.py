"""dataflows/hardware.yml runs: every hardware node, on fake devices, under `dora run`.

The dataflow is the shipped hardware.yml with its `deploy:` lines removed
(`dora run` refuses them) and each device setting pointed at a fake that
speaks the device's bytes: two Feetech servo buses and two RPLIDAR A1s on
ptys, an ArduPilot on a pty (MAVLink 2), a Motive NatNet server on
127.0.0.1, five USB cameras as MJPEG streams on 127.0.0.1 (opened through
OpenCV like the V4L2 devices), and the headset server on a free local port
with its own certificate. Nobody wears the headset, so nothing is commanded to move; the
test waits until the recorder has messages from every device node and the
cameras, stops the dataflow (Ctrl-C: every node gets STOP) and checks the
recording.
"""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow.ipc as ipc
import pytest
import yaml

from teledora.operators.mocap import natnet_frame as nf
from teledora.operators.drive.sts_servo_model import SimulatedServo
from teledora.recording import RunReader
from teledora.fakes.ardupilot import FakeArduPilot  # noqa: E402
from teledora.fakes.feetech_bus import FakeFeetechBus, FakeServo  # noqa: E402
from teledora.fakes.motive import FakeMotive  # noqa: E402
from teledora.fakes.mjpeg_camera import FakeMjpegCamera  # noqa: E402
from teledora.fakes.rplidar_a1 import FakeRplidarA1  # noqa: E402

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
TICKS_PER_MM = 4096 / 131.0
DEVICE_TOPICS = ["arms__joint_states", "base__odom", "lift__state", "lidar_front__scan", "lidar_back__scan",
                 "scan_merger__scan", "ekf__pose", "mocap__pose", "cameras__chest", "cameras__right_wrist",
                 "cameras__calibration", "renderer__diagnostics", "xr__diagnostics"]
CAMERAS = ("chest", "top_front", "top_back", "left_wrist", "right_wrist")
# rows each topic must reach; the renderer here has no window and no cameras,
# so it sends one diagnostics message and ends (docs/rendering.md)
MIN_ROWS = {"renderer__diagnostics": 1}


def _left_bus() -> list[FakeServo]:
    arm = [FakeServo(i, 777, SimulatedServo(position_ticks=2048.0)) for i in range(1, 8)]
    wheels = [FakeServo(i, 777, SimulatedServo(position_ticks=1000.0 * i)) for i in (8, 9, 10)]
    floor = 50_000.0
    lift = FakeServo(11, 2569, SimulatedServo(position_ticks=floor - 20 * TICKS_PER_MM, max_stop_ticks=floor,
                                              min_stop_ticks=floor - 610 * TICKS_PER_MM))
    return arm + wheels + [lift]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rows(run_dir: Path, topic: str) -> int:
    try:
        with ipc.open_stream(run_dir / f"{topic}.arrow") as reader:
            return sum(b.num_rows for b in reader)
    except Exception:  # not there yet, or a batch being written
        return 0


def _local_dataflow(tmp: Path, devices: dict[str, str], run_dir: Path) -> Path:
    """hardware.yml without deploy, with device settings swapped for the fakes'."""
    flow = yaml.safe_load((REPO / "dataflows" / "hardware.yml").read_text())
    swap = {
        "/dev/am2_bus_left": devices["left"], "/dev/am2_bus_right": devices["right"],
        "/dev/rplidar_front": devices["lidar_front"], "/dev/rplidar_back": devices["lidar_back"],
        "/dev/autopilot": devices["autopilot"],
    }
    extra = {
        "arms": ["--timeout-s", "2.0"], "base": ["--timeout-s", "2.0"], "lift": ["--timeout-s", "2.0"],
        "lidar_front": ["--no-power-up-delay"], "lidar_back": ["--no-power-up-delay"],
        "xr": ["--host", "127.0.0.1", "--port", devices["xr_port"], "--cert-dir", str(tmp / "cert")],
        "mocap": ["--server", "127.0.0.1", "--command-port", devices["motive_port"]],
        "renderer": ["--viewer", "off"],
        "cameras": [a for name in CAMERAS for a in ("--device", f"{name}={devices['camera_' + name]}")],
    }
    for entry in flow["nodes"]:
        entry.pop("deploy")
        args = [swap.get(a, a) for a in shlex.split(entry["args"])] + extra.get(entry["id"], [])
        if entry["id"] == "xr":  # drop the shipped --port so the free one applies
            i = args.index("--port")
            del args[i:i + 2]
        entry["args"] = shlex.join(args)
    for entry in flow["nodes"]:
        if entry["id"] == "recorder":
            entry.setdefault("env", {})["TELEDORA_RUN_DIR"] = str(run_dir)
    path = tmp / "hardware_local.yml"  # away from types/: dora only warns about the annotations
    path.write_text(yaml.safe_dump(flow, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def hardware_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hardware")
    run_dir = tmp / "run"
    stop = threading.Event()
    with FakeFeetechBus(_left_bus()) as left, \
            FakeFeetechBus([FakeServo(i, 777, SimulatedServo(position_ticks=2048.0)) for i in range(1, 8)]) as right, \
            FakeRplidarA1(scan_rate_hz=5.5) as front, FakeRplidarA1(scan_rate_hz=10.0) as back, \
            FakeArduPilot(heartbeat_period_s=0.2, serial=True) as autopilot, FakeMotive() as motive:

        def stream_motive() -> None:
            while not stop.is_set():
                if motive.data_address is not None:
                    motive.send_frame([nf.RigidBodySample(3, (0.1, 0.0, 0.2), (0.0, 0.0, 0.0, 1.0), 0.00025, True)])
                time.sleep(1 / 120)

        streamer = threading.Thread(target=stream_motive, daemon=True)
        streamer.start()
        cameras = {name: FakeMjpegCamera(160, 120, 15.0) for name in CAMERAS}
        for cam in cameras.values():
            cam.plug()
        devices = {**{f"camera_{n}": c.url for n, c in cameras.items()},"left": left.port, "right": right.port, "lidar_front": front.port, "lidar_back": back.port,
                   "autopilot": autopilot.device, "motive_port": str(motive.command_port), "xr_port": str(_free_port())}
        flow = _local_dataflow(tmp, devices, run_dir)
        env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", RUST_BACKTRACE="0",
                   MUJOCO_GL="egl")
        log_path = tmp / "dora.log"
        try:
            with open(log_path, "w") as log:
                proc = subprocess.Popen([str(BIN / "dora"), "run", str(flow)], cwd=tmp, env=env, stdout=log,
                                        stderr=subprocess.STDOUT)
                deadline = time.monotonic() + 75.0
                while time.monotonic() < deadline and proc.poll() is None:
                    if all(_rows(run_dir, t) >= MIN_ROWS.get(t, 2) for t in DEVICE_TOPICS):
                        break
                    time.sleep(0.5)
                counts = {t: _rows(run_dir, t) for t in DEVICE_TOPICS}
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        finally:
            stop.set()
            streamer.join(timeout=2)
            for cam in cameras.values():
                cam.unplug()
        noise = ("unknown type", "queue size limit", "dropping `", "DEBUG", "2742")
        log = "\n".join(line for line in log_path.read_text(errors="replace").splitlines()
                        if not any(n in line for n in noise))
        yield {"run_dir": run_dir, "counts": counts, "returncode": proc.returncode, "log": log, "left": left}


def test_every_device_node_and_the_cameras_published(hardware_run) -> None:
    counts = hardware_run["counts"]
    assert all(n >= MIN_ROWS.get(t, 2) for t, n in counts.items()), (counts, hardware_run["log"][-4000:])


def test_the_run_ends_cleanly_on_stop_with_a_complete_recording(hardware_run) -> None:
    reader = RunReader(hardware_run["run_dir"])
    assert reader.complete, hardware_run["log"][-4000:]
    assert set(DEVICE_TOPICS) <= set(reader.topics)


def test_nothing_moved_without_an_operator(hardware_run) -> None:
    """No headset: the wheels only ever got zero goals and the arms only their own positions."""
    left = hardware_run["left"]
    for sid in (8, 9, 10):
        assert {int.from_bytes(d, "little") & 0x7FFF for d in left.writes_to(sid, 46)} == {0}
    for sid in range(1, 8):
        assert {int.from_bytes(d, "little") for d in left.writes_to(sid, 42)} == {2048}
