"""End to end in a real browser: headless Chromium + IWER (emulated Quest 3) opens the
WebXR page over HTTPS, pairs, moves controllers and presses buttons; the xr_webxr
node and the teleop node run live, wired like the dataflow (xr/controllers ->
teleop, teleop/state -> xr), and the test asserts what teleop commanded.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import yaml
import pytest

from teledora import models
from teledora.nodes.teleop import teleop

from teledora.nodes.xr import xr_webxr
from teledora.operators.contract.messages import decode, encode

HERE = Path(__file__).resolve().parent
CHROMIUM = Path("/usr/bin/chromium")
IWER = HERE / "node_modules" / "iwer" / "build" / "iwer.module.js"
PLAYWRIGHT = HERE / "node_modules" / "playwright-core"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian chromium at /usr/bin/chromium (apt-get install -y chromium)"),
    pytest.mark.skipif(not (IWER.exists() and PLAYWRIGHT.exists()),
                       reason="needs npm packages under tests/browser (cd tests/browser && npm ci)"),
    pytest.mark.skipif(shutil.which("node") is None, reason="needs node on PATH"),
]

ARM = [f"{s}_{j}" for s in ("left", "right") for j in
       ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw_joint", "wrist_roll", "gripper")]


class WiredNode:
    """A live in-process stand-in for a dora node: inputs come from a queue, outputs are
    recorded and routed to other nodes' queues (like dataflow edges)."""

    def __init__(self, routes: dict[str, list[tuple["WiredNode", str]]] | None = None) -> None:
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.routes = routes or {}
        self.outputs: dict[str, list[Any]] = {}
        self.logs: list[tuple[str, str]] = []

    def push(self, input_id: str, value: Any) -> None:
        self.inbox.put({"type": "INPUT", "id": input_id, "value": value, "metadata": {}})

    def stop(self) -> None:
        self.inbox.put({"type": "STOP", "id": "test"})
        self.inbox.put(None)

    def next(self, timeout: float | None = None):
        try:
            return self.inbox.get(timeout=timeout)
        except queue.Empty:
            return {"type": "ERROR", "error": "timeout"}

    def try_recv(self):
        try:
            ev = self.inbox.get_nowait()
        except queue.Empty:
            return None
        if ev is None:  # end of stream: leave the marker for next()
            self.inbox.put(None)
        return ev

    def drain(self):
        out = []
        while (ev := self.try_recv()) is not None:
            out.append(ev)
        return out

    def send_output(self, output_id: str, value: Any, metadata: dict | None = None) -> None:
        self.outputs.setdefault(output_id, []).append(value)
        for target, input_id in self.routes.get(output_id, []):
            target.push(input_id, value)

    def log(self, level: str, message: str) -> None:
        self.logs.append((level, message))


def test_headset_page_drives_teleop(tmp_path: Path):
    token = "e2e-token"
    xr_node = WiredNode()
    teleop_node = WiredNode(routes={"state": [(xr_node, "state")]})
    xr_node.routes = {"controllers": [(teleop_node, "controllers")]}
    joints = encode("JointState", dict(stamp_ns=time.time_ns(), names=ARM, position=np.zeros(len(ARM)), velocity=[], effort=[]))
    teleop_node.push("joint_states", joints)
    teleop_node.push("lift", encode("LiftState", dict(stamp_ns=time.time_ns(), height_m=0.3, velocity_m_s=0.0, homed=True)))

    args = xr_webxr.parse_args(["--host", "127.0.0.1", "--port", "0", "--cert-dir", str(tmp_path / "certs"),
                                "--token", token, "--emulator-js", str(IWER)])
    server = xr_webxr.build_server(args)
    xr_thread = threading.Thread(target=xr_webxr.main, kwargs=dict(argv=[], node=xr_node, server=server), daemon=True)
    # timeouts are the table tests' business; here a loaded 2-core machine must not turn
    # scheduling hiccups into pose timeouts, so the e2e run gets generous ones
    config = tmp_path / "teleop.yaml"
    shipped = models.load_yaml("alohamini2/teleop.yaml")
    config.write_text(yaml.safe_dump({**shipped, "pose_timeout_s": 5.0, "input_timeout_s": 5.0}))
    teleop_thread = threading.Thread(target=teleop.main, kwargs=dict(argv=["--config", str(config)], node=teleop_node),
                                     daemon=True)
    teleop_thread.start()
    xr_thread.start()
    for _ in range(200):
        if server.port:
            break
        time.sleep(0.05)
    try:
        proc = subprocess.run(["node", str(HERE / "webxr_driver.mjs"), f"https://127.0.0.1:{server.port}", token],
                              cwd=HERE, capture_output=True, text=True, timeout=120)
    finally:
        xr_node.stop()
        xr_thread.join(20)
        teleop_node.stop()
        teleop_thread.join(20)
    steps = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    names = [s["step"] for s in steps]
    assert proc.returncode == 0 and "done" in names, f"driver failed: {proc.stdout}\n{proc.stderr}"

    by_step = {s["step"]: s for s in steps}
    assert "pairing token" in by_step["bad_token"]["reason"]
    assert "in control" in by_step["second_client"]["reason"]
    assert "E-STOP" in by_step["estop_latched"]["robot"]

    controllers = [decode("XrControllers", v) for v in xr_node.outputs["controllers"]]
    assert all(c["source"] == "webxr" for c in controllers)
    assert max(c["right"]["epoch"] for c in controllers) == 2  # the reconnect made a new epoch

    states = [decode("TeleopState", v) for v in teleop_node.outputs["state"]]
    events = [e for s in states for e in s["events"]]
    assert "left_clutch_on" in events and "left_clutch_off" in events
    assert "right_epoch_2" in events
    assert any(e.startswith("estop_latched:page_stop") for e in events)
    assert states[-1]["estop_latched"] and states[-1]["arms_paused"]

    # the 0.1 m move to WebXR +x (operator's right) moved the left target 0.1 m to -y in base_link;
    # the 0.2 m move made while clutched did not carry over
    targets = [decode("ArmTargets", v) for v in teleop_node.outputs["arm_targets"]]
    tracked = [t["left"]["position"] for t in targets if t["left"]["enabled"]]
    start = tracked[0]
    span = np.array(tracked) - start
    assert span[:, 1].min() == pytest.approx(-0.1, abs=1e-6)
    assert np.abs(span[:, 0]).max() < 1e-6 and np.abs(span[:, 2]).max() < 1e-6

    diag = decode("Diagnostics", xr_node.outputs["diagnostics"][-1])
    details = json.loads(diag["details_json"])
    assert details["refused_token"] == 1 and details["refused_busy"] == 1
    assert diag["rejected"] == 0
