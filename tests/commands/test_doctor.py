"""`teledora doctor` against fake devices: pty serial ports behind udev-like
symlinks, a fake ArduPilot on UDP, a fake Motive NatNet server and a
generated headset certificate."""

from __future__ import annotations

import argparse
import datetime
import os
from pathlib import Path

import pytest
import yaml

from teledora.commands import doctor
from teledora.devices.xr.webxr_certificate import CERT_FILE, KEY_FILE, ensure_certificate
from teledora.fakes.ardupilot import FakeArduPilot  # noqa: E402
from teledora.fakes.motive import FakeMotive  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def ptys(tmp_path):
    """Five pty slaves, each behind a symlink like the udev rules make."""
    fds, links = [], {}
    for name in ("bus_left", "bus_right", "rplidar_front", "rplidar_back", "spare"):
        master, slave = os.openpty()
        fds += [master, slave]
        link = tmp_path / name
        link.symlink_to(os.ttyname(slave))
        links[name] = str(link)
    yield links
    for fd in fds:
        os.close(fd)


def _dataflow(tmp_path: Path, ports: dict, ardupilot: str, motive_port: int, cert_dir: Path, body: str = "alohamini2") -> Path:
    nodes = [
        {"id": "xr", "path": "python", "args": f"-m teledora.nodes.xr.xr_webxr --cert-dir {cert_dir}", "deploy": {"machine": "workstation"}},
        {"id": "arms", "path": "python", "deploy": {"machine": "robot"},
         "args": f"-m teledora.nodes.drive.arms_feetech --left-port {ports['bus_left']} --right-port {ports['bus_right']}"},
        {"id": "base", "path": "python", "args": f"-m teledora.nodes.drive.base_feetech --port {ports['bus_left']}", "deploy": {"machine": "robot"}},
        {"id": "lift", "path": "../nodes/drive/lift_feetech.py", "args": f"--port {ports['bus_left']}", "deploy": {"machine": "robot"}},
        {"id": "lidar_front", "path": "python", "args": "-m teledora.nodes.lidar.lidar_rplidar --lidar front", "deploy": {"machine": "robot"},
         "env": {"LIDAR_PORT": ports["rplidar_front"]}},
        {"id": "lidar_back", "path": "python", "args": f"-m teledora.nodes.lidar.lidar_rplidar --lidar back --port {ports['rplidar_back']}",
         "deploy": {"machine": "robot"}},
        {"id": "ekf", "path": "python", "args": f"-m teledora.nodes.estimation.ekf_ardupilot --connection {ardupilot}", "deploy": {"machine": "robot"}},
        {"id": "mocap", "path": "python", "deploy": {"machine": "workstation"},
         "args": f"-m teledora.nodes.mocap.mocap_natnet --server 127.0.0.1 --command-port {motive_port} --body-name {body}"},
        {"id": "teleop", "path": "python", "args": "-m teledora.nodes.teleop.teleop", "deploy": {"machine": "workstation"}},
    ]
    path = tmp_path / "hw.yml"
    path.write_text(yaml.safe_dump({"nodes": nodes}))
    return path


def _doctor(dataflow: Path, machine: str | None = None) -> tuple[int, str]:
    lines: list[str] = []
    rc = doctor.run(argparse.Namespace(dataflow=dataflow, machine=machine, timeout_s=1.5), out=lines.append)
    return rc, "\n".join(lines)


def test_everything_present_passes(tmp_path, ptys) -> None:
    ensure_certificate(tmp_path / "cert")
    with FakeArduPilot(heartbeat_period_s=0.05) as ap, FakeMotive() as motive:
        flow = _dataflow(tmp_path, ptys, f"udpout:127.0.0.1:{ap.port}", motive.command_port, tmp_path / "cert")
        rc, text = _doctor(flow)
    assert rc == 0, text
    assert "all devices present" in text
    # the left bus is checked once, naming all three nodes on it
    bus_line = next(line for line in text.splitlines() if ptys["bus_left"] in line)
    assert "arms: left arm bus" in bus_line and "base: left bus" in bus_line and "lift: left bus" in bus_line
    assert "heartbeat from system 1" in text
    assert "Motive answers, NatNet 4.1.0.0" in text and "rigid body alohamini2 is defined" in text
    assert "14 joints calibrated" in text
    assert ptys["rplidar_front"] in text  # LIDAR_PORT from the node's env


def test_missing_devices_are_named_in_plain_words(tmp_path, ptys) -> None:
    ports = dict(ptys, bus_right=str(tmp_path / "unplugged"), rplidar_back=str(tmp_path / "not_a_tty"))
    (tmp_path / "not_a_tty").write_text("")
    silent = FakeArduPilot()  # bound, never started: nothing answers
    with FakeMotive() as motive:
        flow = _dataflow(tmp_path, ports, f"udpout:127.0.0.1:{silent.port}", motive.command_port, tmp_path / "nocert",
                         body="somebody_else")
        rc, text = _doctor(flow)
    silent.sock.close()
    assert rc == 1
    assert f"{tmp_path / 'unplugged'} (arms: right arm bus): does not exist" in text
    assert "is not a serial device" in text
    assert "no MAVLink heartbeat within 1.5 s" in text
    assert "no rigid body named 'somebody_else' (Motive has ['alohamini2'])" in text
    assert "certificate not there yet" in text  # a warning: the xr node makes one
    assert "problem(s)" in text


def test_machine_filter_checks_only_that_machines_nodes(tmp_path, ptys) -> None:
    flow = _dataflow(tmp_path, ptys, "udpout:127.0.0.1:9", 9, tmp_path / "nocert")
    plan = doctor.collect_checks(yaml.safe_load(flow.read_text()), "workstation", 0.1)
    headings = [h for h, _ in plan]
    assert headings == ["xr", "mocap"]
    robot = [h for h, _ in doctor.collect_checks(yaml.safe_load(flow.read_text()), "robot", 0.1)]
    assert "mocap" not in robot and "ekf" in robot and "arms" in robot


def test_certificate_problems(tmp_path) -> None:
    long_ago = datetime.datetime(2020, 1, 1, tzinfo=datetime.timezone.utc)
    ensure_certificate(tmp_path, now=long_ago)
    (tmp_path / KEY_FILE).chmod(0o644)
    text = "\n".join(f.detail for f in doctor.check_certificate(tmp_path))
    assert "has expired" in text and "chmod 600" in text
    (tmp_path / CERT_FILE).write_text("garbage")
    [finding] = doctor.check_certificate(tmp_path)
    assert finding.level == doctor.FAIL and "not a readable PEM certificate" in finding.detail


def test_kernel_tty_names_are_flagged(tmp_path) -> None:
    candidates = [p for p in ("/dev/ttyS0", "/dev/ttyS1", "/dev/ttyUSB0", "/dev/ttyACM0") if Path(p).exists()]
    if not candidates:
        pytest.skip("no kernel tty device on this machine")
    levels = {f.level: f.detail for f in doctor.check_serial(candidates[0], "test")}
    assert "can change between boots" in levels.get(doctor.WARN, "")


def test_calibration_lacking_joints_fails(tmp_path) -> None:
    from teledora import models
    data = models.load_yaml("alohamini2/calibration.yaml")
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(data))
    assert doctor.check_calibration(str(path), ["left_elbow_flex"]).level == doctor.OK
    finding = doctor.check_calibration(str(path), ["left_elbow_flex", "left_tail"])
    assert finding.level == doctor.FAIL and "left_tail" in finding.detail


def test_node_modules_in_both_dataflow_forms() -> None:
    assert doctor.node_module({"path": "python", "args": "-m teledora.nodes.drive.arms_feetech --sides left"}) == "arms_feetech"
    assert doctor.node_args({"path": "python", "args": "-m teledora.nodes.drive.arms_feetech --sides left"}) == ["--sides", "left"]
    assert doctor.node_module({"path": "../nodes/drive/lift_feetech.py", "args": "--port /dev/x"}) == "lift_feetech"
    assert doctor.node_module({"path": "python", "args": "-m other.module"}) is None


def test_shipped_hardware_dataflow_names_every_device() -> None:
    flow = yaml.safe_load((REPO / "dataflows" / "hardware.yml").read_text())
    headings = [h for h, _ in doctor.collect_checks(flow, None, 0.1)]
    assert "arms: left arm bus, base: left bus, lift: left bus" in headings
    assert "arms: right arm bus" in headings
    assert "lidar_front: RPLIDAR front" in headings and "lidar_back: RPLIDAR back" in headings
    assert {"arms", "ekf", "mocap", "xr"} <= set(headings)
