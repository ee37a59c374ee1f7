"""An emulated headset against the live xr (WebXR variant) and teleop nodes.

Headless Chromium with IWER (an emulated Meta Quest 3 and its two Touch
controllers), driven by a node.js script, opens the real headset page from a
real ``xr_webxr`` server over HTTPS + WSS. The xr and teleop nodes run their
``main()`` in threads on :class:`WiredNode` s, wired like the dataflow
(``xr/controllers`` -> teleop, ``teleop/state`` -> xr), with a fixed joint and
lift state standing in for the robot; on request the episodes node runs too
(``xr/controllers`` -> episodes, ``episodes/state`` -> xr).

The driver is called as ``node DRIVER BASE_URL TOKEN [ARGS...]`` from its own
folder (where its npm packages are) and prints one JSON object per line.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import yaml

from teledora import models
from teledora.fakes.wired_node import WiredNode
from teledora.nodes.teleop import episodes, teleop
from teledora.nodes.xr import xr_webxr
from teledora.operators.contract.messages import encode

ARM_JOINTS = [f"{s}_{j}" for s in ("left", "right") for j in
              ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw_joint", "wrist_roll", "gripper")]


@dataclass
class HeadsetRun:
    """What one driver run printed and what the two nodes published."""

    returncode: int
    stdout: str
    stderr: str
    steps: list[dict[str, Any]]
    xr: WiredNode
    teleop: WiredNode
    episodes: WiredNode | None = None

    def step(self, name: str) -> dict[str, Any]:
        """The last printed step called ``name``."""
        return [s for s in self.steps if s.get("step") == name][-1]


def run_headset(driver: Path, workdir: Path, iwer_js: Path, teleop_overrides: Mapping[str, Any], args: Sequence[str] = (),
                token: str = "e2e-token", timeout_s: float = 120.0,
                feed: Callable[[WiredNode, threading.Event], None] | None = None,
                episodes_args: Sequence[str] | None = None) -> HeadsetRun:
    """Runs ``driver`` against freshly started xr and teleop nodes and stops them after.

    The teleop config is the shipped teleop.yaml with ``teleop_overrides``
    applied; ``workdir`` holds it and the certificate. ``feed(xr_node, stop)``,
    if given, runs in its own thread meanwhile (e.g. pushing camera images).
    ``episodes_args`` (the episodes node's arguments), if given, runs the
    episodes node as well.
    """
    xr_node = WiredNode()
    teleop_node = WiredNode(routes={"state": [(xr_node, "state")]})
    xr_node.routes = {"controllers": [(teleop_node, "controllers")]}
    episodes_node = None
    if episodes_args is not None:
        episodes_node = WiredNode(routes={"state": [(xr_node, "episode")]})
        xr_node.routes["controllers"].append((episodes_node, "controllers"))
    now = time.time_ns()
    teleop_node.push("joint_states", encode("JointState", dict(
        stamp_ns=now, names=ARM_JOINTS, position=np.zeros(len(ARM_JOINTS)), velocity=[], effort=[])))
    teleop_node.push("lift", encode("LiftState", dict(stamp_ns=now, height_m=0.3, velocity_m_s=0.0, homed=True)))

    server = xr_webxr.build_server(xr_webxr.parse_args([
        "--host", "127.0.0.1", "--port", "0", "--cert-dir", str(workdir / "certs"), "--token", token,
        "--emulator-js", str(iwer_js)]))
    config = workdir / "teleop.yaml"
    config.write_text(yaml.safe_dump({**models.load_yaml("alohamini2/teleop.yaml"), **teleop_overrides}))
    threads = [
        threading.Thread(target=teleop.main, kwargs=dict(argv=["--config", str(config)], node=teleop_node), daemon=True),
        threading.Thread(target=xr_webxr.main, kwargs=dict(argv=[], node=xr_node, server=server), daemon=True),
    ]
    if episodes_node is not None:
        threads.append(threading.Thread(target=episodes.main, kwargs=dict(argv=list(episodes_args), node=episodes_node),
                                        daemon=True))
    stop_feed = threading.Event()
    if feed is not None:
        threads.append(threading.Thread(target=feed, args=(xr_node, stop_feed), daemon=True))
    for t in threads:
        t.start()
    for _ in range(200):
        if server.port:
            break
        time.sleep(0.05)
    try:
        proc = subprocess.run(["node", str(driver), f"https://127.0.0.1:{server.port}", token, *args],
                              cwd=driver.parent, capture_output=True, text=True, timeout=timeout_s)
    finally:
        stop_feed.set()
        xr_node.stop()
        threads[1].join(20)
        teleop_node.stop()
        threads[0].join(20)
        if episodes_node is not None:
            episodes_node.stop()
            threads[2].join(20)
    steps = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return HeadsetRun(proc.returncode, proc.stdout, proc.stderr, steps, xr_node, teleop_node, episodes_node)
