"""`teledora doctor`: checks a hardware dataflow's devices before anything moves.

Reads the dataflow (default ``dataflows/hardware.yml``), finds each device
node by the module it starts (``-m teledora.nodes.<module>`` or
``path: .../<module>.py``), takes the device settings from the node's
``args``/``env`` and from the config YAMLs it names (the shipped
models/alohamini2/*.yaml by default), and checks:

* serial ports (servo buses, lidars, autopilot): the path exists, is a
  character device the user may read and write, and is a udev name rather
  than a kernel name (``/dev/ttyUSB0`` can change between boots);
* the arm calibration file: readable, one record per arm joint;
* the autopilot: a MAVLink HEARTBEAT arrives (serial, or UDP after ours);
* the motion-capture server: Motive answers NatNet CONNECT with SERVER_INFO,
  and the configured rigid body is in its MODEL_DEF;
* the headset page's TLS certificate and key: present, private, not expiring.

Nothing is written to any device, and serial ports are not opened (opening
one toggles its control lines, which starts an RPLIDAR's motor). Each problem
is printed in plain words; the exit status is 1 when something is missing.
Use ``--machine robot`` on the robot (only the nodes deployed there).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shlex
import socket
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml

from teledora.models.config_files import load_drive_config, load_estimation_config, load_lidar_setup, load_mocap_config

OK, WARN, FAIL = "ok", "warn", "MISSING"
_KERNEL_TTY = re.compile(r"^/dev/tty(USB|ACM|S|AMA)\d+$")


@dataclass
class Finding:
    """One check's outcome: ``level`` is ok / warn / MISSING."""

    level: str
    what: str
    detail: str


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("doctor", help="check the devices a hardware dataflow needs", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dataflow", type=Path, default=Path("dataflows/hardware.yml"), help="dataflow YAML")
    p.add_argument("--machine", default=None, help="check only nodes deployed on this machine (robot, workstation)")
    p.add_argument("--timeout-s", type=float, default=3.0, help="how long to wait for the autopilot and Motive")
    p.set_defaults(func=run)


# ------------------------------------------------------------------ node settings


def node_module(entry: Mapping[str, Any]) -> str | None:
    """The teledora node module a dataflow entry starts (``arms_feetech``), or None."""
    args = shlex.split(str(entry.get("args") or ""))
    if "-m" in args and args.index("-m") + 1 < len(args):
        name = args[args.index("-m") + 1]
        return name.rsplit(".", 1)[-1] if name.startswith("teledora.nodes.") else None
    path = str(entry.get("path") or "")
    return Path(path).stem if path.endswith(".py") else None


def node_args(entry: Mapping[str, Any]) -> list[str]:
    """The arguments the node's own parser sees (after ``-m module``)."""
    args = shlex.split(str(entry.get("args") or ""))
    if "-m" in args:
        return args[args.index("-m") + 2:]
    return args


def _opts(argv: list[str], *flags: str) -> dict[str, str]:
    """Values of ``--flag value`` / ``--flag=value`` options (unknown ones ignored)."""
    parser = argparse.ArgumentParser(add_help=False)
    for flag in flags:
        parser.add_argument(flag, default=None)
    known, _ = parser.parse_known_args(argv)
    return {k: v for k, v in vars(known).items() if v is not None}


# ------------------------------------------------------------------ device checks


def check_serial(path: str, users: str) -> list[Finding]:
    """A serial device: exists, character device, read/write allowed, udev name."""
    what = f"{path} ({users})"
    p = Path(path)
    if not p.exists():
        hint = "is it plugged in, powered, and is its udev rule installed (docs/hardware.md)?"
        return [Finding(FAIL, what, f"does not exist: {hint}")]
    try:
        mode = p.stat().st_mode
    except OSError as exc:
        return [Finding(FAIL, what, f"cannot be inspected: {exc}")]
    if not stat.S_ISCHR(mode):
        return [Finding(FAIL, what, f"is not a serial device (it resolves to {p.resolve()})")]
    out = []
    if not os.access(p, os.R_OK | os.W_OK):
        out.append(Finding(FAIL, what, "exists but this user may not read and write it: add the user to the "
                                       "'dialout' group (or fix the udev rule's MODE/GROUP) and log in again"))
    if _KERNEL_TTY.match(path) and not p.is_symlink():
        out.append(Finding(WARN, what, "is a kernel device name that can change between boots or when another "
                                       "USB device is plugged in: name it with a udev rule by hub port"))
    if not out:
        target = f" -> {os.path.realpath(p)}" if p.is_symlink() else ""
        out.append(Finding(OK, what, f"serial device present{target}"))
    return out


def check_calibration(path_or_name: str, joints: Iterable[str]) -> Finding:
    from teledora.models.config_files import load_calibration

    what = f"arm calibration {path_or_name}"
    try:
        calibration = load_calibration(path_or_name)
    except Exception as exc:  # unreadable file or a record that does not parse
        return Finding(FAIL, what, f"cannot be read: {exc}; run `teledora calibrate`")
    missing = sorted(set(joints) - set(calibration.servos))
    if missing:
        return Finding(FAIL, what, f"has no record for {missing}; run `teledora calibrate`")
    recorded_on = f" (recorded on {calibration.robot_id})" if calibration.robot_id else ""
    return Finding(OK, what, f"{len(calibration.servos)} joints calibrated{recorded_on}")


def check_autopilot(connection: str, baud: int, timeout_s: float) -> list[Finding]:
    """Waits for a HEARTBEAT (sending ours first, which a UDP autopilot needs to learn our address)."""
    from pymavlink import mavutil

    out: list[Finding] = []
    if connection.startswith("/dev/"):
        out += check_serial(connection, "autopilot")
        if any(f.level == FAIL for f in out):
            return out
    what = f"autopilot at {connection}"
    try:
        link = mavutil.mavlink_connection(connection, baud=baud, source_system=1, source_component=191)
    except Exception as exc:
        return out + [Finding(FAIL, what, f"cannot open the link: {exc}")]
    try:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            link.mav.heartbeat_send(mavutil.mavlink.MAV_TYPE_ONBOARD_CONTROLLER, mavutil.mavlink.MAV_AUTOPILOT_INVALID, 0, 0, 0)
            msg = link.recv_match(type="HEARTBEAT", blocking=True, timeout=0.25)
            if msg is not None and msg.get_srcComponent() != 191:
                return out + [Finding(OK, what, f"heartbeat from system {msg.get_srcSystem()} "
                                                f"(autopilot type {msg.autopilot}, vehicle type {msg.type})")]
        return out + [Finding(FAIL, what, f"no MAVLink heartbeat within {timeout_s:g} s: is the flight controller "
                                          "powered, and the port/baud (SERIALn_PROTOCOL 2) right?")]
    finally:
        link.close()


def check_natnet(server: str, command_port: int, client_name: str, version: tuple[int, int, int, int],
                 body_name: str | None, body_id: int | None, timeout_s: float) -> list[Finding]:
    """CONNECT -> SERVER_INFO, then MODEL_DEF must name the rigid body."""
    from teledora.operators.mocap import natnet_model_def as md
    from teledora.operators.mocap import natnet_protocol as nn
    what = f"Motive NatNet server {server}:{command_port}"
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(0.25)
    try:
        info, bodies = None, None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and (info is None or bodies is None):
            try:
                sock.sendto(nn.build_connect(client_name, version) if info is None
                            else nn.build_packet(nn.MessageId.REQUEST_MODEL_DEF), (server, command_port))
                data, _ = sock.recvfrom(65535)
                packet = nn.split_packet(data)
            except socket.timeout:
                continue
            except (OSError, nn.NatNetProtocolError) as exc:
                return [Finding(FAIL, what, f"unreachable: {exc}")]
            if packet.message_id == nn.MessageId.SERVER_INFO:
                info = nn.parse_server_info(packet.payload)
            elif packet.message_id == nn.MessageId.MODEL_DEF and info is not None:
                bodies = md.parse_model_def(packet.payload, info.natnet_version)
    finally:
        sock.close()
    if info is None:
        return [Finding(FAIL, what, f"no answer to NatNet CONNECT within {timeout_s:g} s: is Motive streaming "
                                    "(Edit > Settings > Streaming: Broadcast Frame Data) on this address?")]
    version_text = ".".join(map(str, info.natnet_version))
    out = [Finding(OK, what, f"{info.app_name} answers, NatNet {version_text}, "
                             f"{'multicast ' + info.multicast_group if info.is_multicast else 'unicast'}")]
    if bodies is None:
        out.append(Finding(WARN, what, "no MODEL_DEF answer: the rigid body could not be checked"))
    elif body_id is not None and body_id not in {b.id for b in bodies}:
        out.append(Finding(FAIL, what, f"no rigid body with streaming id {body_id} (Motive has "
                                       f"{sorted((b.name, b.id) for b in bodies)})"))
    elif body_id is None and body_name not in {b.name for b in bodies}:
        out.append(Finding(FAIL, what, f"no rigid body named {body_name!r} (Motive has {sorted(b.name for b in bodies)})"))
    else:
        out.append(Finding(OK, what, f"rigid body {body_name if body_id is None else body_id} is defined"))
    return out


def check_certificate(cert_dir: Path, now: datetime.datetime | None = None) -> list[Finding]:
    from cryptography import x509

    from teledora.devices.xr.webxr_certificate import CERT_FILE, KEY_FILE

    now = now or datetime.datetime.now(datetime.timezone.utc)
    cert, key = cert_dir / CERT_FILE, cert_dir / KEY_FILE
    what = f"headset TLS certificate in {cert_dir}"
    if not cert.exists() or not key.exists():
        return [Finding(WARN, what, f"{'certificate' if not cert.exists() else 'key'} not there yet: the xr node "
                                    "creates one on first start, and the headset browser must accept it once")]
    try:
        loaded = x509.load_pem_x509_certificate(cert.read_bytes())
    except (OSError, ValueError) as exc:
        return [Finding(FAIL, what, f"{cert.name} is not a readable PEM certificate ({exc}): delete both files "
                                    "and let the xr node create new ones")]
    out = []
    if key.stat().st_mode & 0o077:
        out.append(Finding(FAIL, what, f"{key} is readable by other users: chmod 600 it"))
    left = loaded.not_valid_after_utc - now
    if left.total_seconds() <= 0:
        out.append(Finding(FAIL, what, "the certificate has expired: delete both files; the xr node makes new ones"))
    elif left < datetime.timedelta(days=14):
        out.append(Finding(WARN, what, f"the certificate expires in {left.days} days"))
    if not out:
        out.append(Finding(OK, what, f"certificate and key present, valid until {loaded.not_valid_after_utc:%Y-%m-%d}"))
    return out


# ------------------------------------------------------------------ the plan


def collect_checks(dataflow: Mapping[str, Any], machine: str | None, timeout_s: float) -> list[tuple[str, Callable[[], list[Finding]]]]:
    """(heading, check) pairs for the device nodes of a parsed dataflow; serial ports shared by
    several nodes (the left servo bus) are checked once, naming every user."""
    ports: dict[str, list[str]] = {}
    checks: list[tuple[str, Callable[[], list[Finding]]]] = []
    for entry in dataflow.get("nodes") or []:
        deploy = entry.get("deploy") or {}
        if machine and deploy.get("machine") != machine:
            continue
        node, module = str(entry.get("id")), node_module(entry)
        argv, env = node_args(entry), {**os.environ, **{k: str(v) for k, v in (entry.get("env") or {}).items()}}
        if module in ("arms_feetech", "base_feetech", "lift_feetech"):
            o = _opts(argv, "--config", "--port", "--left-port", "--right-port", "--sides", "--calibration")
            drive = load_drive_config(o.get("config"))
            if module == "arms_feetech":
                sides = [s.strip() for s in o.get("sides", "left,right").split(",") if s.strip()]
                for side in sides:
                    port = o.get(f"{side.replace('-', '_')}_port") or drive.buses[side].port
                    ports.setdefault(port, []).append(f"{node}: {side} arm bus")
                joints = [f"{s}_{j}" for s in sides for j in drive.arms.servo_ids]
                calib = o.get("calibration") or drive.arms.calibration
                checks.append((node, lambda c=calib, j=joints: [check_calibration(c, j)]))
            else:
                ports.setdefault(o.get("port") or drive.buses["left"].port, []).append(f"{node}: left bus")
        elif module == "lidar_rplidar":
            o = _opts(argv, "--lidar", "--port", "--config")
            lidars = load_lidar_setup(o.get("config")).lidars
            name = o.get("lidar") or env.get("LIDAR", "front")
            port = o.get("port") or env.get("LIDAR_PORT") or lidars[name].port
            ports.setdefault(port, []).append(f"{node}: RPLIDAR {name}")
        elif module == "ekf_ardupilot":
            o = _opts(argv, "--config", "--connection")
            bridge = load_estimation_config(o.get("config")).ardupilot
            conn, baud = o.get("connection") or bridge.connection, bridge.baud
            checks.append((node, lambda c=conn, b=baud: check_autopilot(c, b, timeout_s)))
        elif module == "mocap_natnet":
            o = _opts(argv, "--config", "--server", "--command-port", "--body-id", "--body-name")
            mocap = load_mocap_config(o.get("config"))
            nat, body = mocap.natnet, mocap.rigid_body
            server = o.get("server") or env.get("TELEDORA_MOCAP_SERVER") or nat.server_address
            body_id = o.get("body_id") or body.id
            args = (server, int(o.get("command_port") or nat.command_port), nat.client_name,
                    nat.natnet_version, o.get("body_name") or body.name,
                    int(body_id) if body_id is not None else None)
            checks.append((node, lambda a=args: check_natnet(*a, timeout_s=timeout_s)))
        elif module == "xr_webxr":
            o = _opts(argv, "--cert-dir")
            if "--plain-http" not in argv:
                default = Path.home() / ".local/share/teledora/webxr"
                cert_dir = Path(o.get("cert_dir") or env.get("XR_WEBXR_CERT_DIR") or default).expanduser()
                checks.append((node, lambda d=cert_dir: check_certificate(d)))
    serial = [(", ".join(users), lambda p=port, u=users: check_serial(p, ", ".join(u))) for port, users in ports.items()]
    return serial + checks


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    if not args.dataflow.is_file():
        out(f"no dataflow at {args.dataflow}: pass --dataflow path/to/hardware.yml")
        return 1
    dataflow = yaml.safe_load(args.dataflow.read_text()) or {}
    try:
        plan = collect_checks(dataflow, args.machine, args.timeout_s)
    except (KeyError, TypeError, ValueError, OSError) as exc:
        out(f"cannot read the device settings of {args.dataflow}: {exc!r}")
        return 1
    if not plan:
        where = f" on machine {args.machine!r}" if args.machine else ""
        out(f"{args.dataflow}: no device nodes{where} to check")
        return 0
    out(f"teledora doctor: {args.dataflow}" + (f" (machine {args.machine})" if args.machine else ""))
    findings: list[Finding] = []
    for _heading, check in plan:
        for f in check():
            findings.append(f)
            out(f"  [{f.level:>7}] {f.what}: {f.detail}")
    missing = [f for f in findings if f.level == FAIL]
    warned = [f for f in findings if f.level == WARN]
    if missing:
        out(f"{len(missing)} problem(s), {len(warned)} warning(s): fix the MISSING lines before starting the dataflow")
        return 1
    out(f"all devices present ({len(warned)} warning(s))")
    return 0
