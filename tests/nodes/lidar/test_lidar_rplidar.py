"""The RPLIDAR A1 hardware node against the pty fake that speaks the device's bytes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

from teledora import models
from teledora.nodes.lidar import lidar_rplidar
from teledora.operators.contract.messages import decode
from teledora.fakes.rplidar_a1 import FakeRplidarA1  # noqa: E402

FAKE_RATE = dict(scan_rate_hz=10.0, samples_per_second=3000.0)


class TimerNode(MockNode):
    """A MockNode whose ``tick`` events come at a timer's pace, one at a time.

    ``on_tick`` runs before each tick (a test changes the fake mid-run there);
    the stream ends early once ``until`` is true (``ticks`` bounds the run).
    """

    def __init__(self, ticks: int, period_s: float = 0.02, on_tick=None, until=None):
        super().__init__([("tick", pa.array([k])) for k in range(ticks)])
        self.period_s = period_s
        self.on_tick = on_tick
        self.until = until

    def next(self, timeout=None):
        time.sleep(self.period_s)
        if self.until is not None and self.until(self):
            self._events.clear()
        if self.on_tick is not None:
            self.on_tick(self)
        return super().next(timeout)

    def drain(self):
        return []


def _config(tmp_path, port: str, read_timeout_s: float = 2.0) -> Path:
    cfg = models.load_yaml("alohamini2/lidar.yaml")
    cfg["lidars"]["front"]["port"] = port
    cfg["hardware"].update(read_timeout_s=read_timeout_s, stop_settle_s=0.1)
    path = tmp_path / "lidar.yaml"
    path.write_text(json.dumps(cfg))
    return path


def test_node_publishes_scans_and_diagnostics(tmp_path):
    with FakeRplidarA1(**FAKE_RATE) as fake:
        node = TimerNode(1000, until=lambda n: len(n.outputs.get("scan", [])) >= 3)
        lidar_rplidar.main(["--lidar", "front", "--config", str(_config(tmp_path, fake.port)), "--no-power-up-delay"], node=node)
        end = time.monotonic() + 2.0  # let the fake read the last requests before it closes
        while fake.requests[-2:] != [0x25, 0xF0] and time.monotonic() < end:
            time.sleep(0.01)
    scans = [decode("LaserScan", v) for v in node.outputs.get("scan", [])]
    assert len(scans) >= 3
    assert all(s["frame_id"] == "lidar_front" and len(s["ranges"]) == 360 for s in scans)
    diag = [decode("Diagnostics", v) for v in node.outputs["diagnostics"]]
    details = json.loads(diag[-1]["details_json"])
    assert details["revolutions"] >= 3 and details["model"] == 0x18
    assert fake.requests[-2:] == [0x25, 0xF0]  # STOP, then motor PWM 0, on the way out


def test_node_reports_a_missing_port_and_keeps_running(tmp_path):
    node = TimerNode(5, period_s=0.0)
    lidar_rplidar.main(["--lidar", "front", "--config", str(_config(tmp_path, str(tmp_path / "nope"))),
                        "--no-power-up-delay"], node=node)
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["level"] == "error" and "cannot open" in diag["last_error"]
    assert "scan" not in node.outputs


def test_node_recovers_by_itself_from_a_lidar_that_went_quiet(tmp_path):
    with FakeRplidarA1(stall_after_samples=1500, **FAKE_RATE) as fake:  # ~0.5 s of data, then silence
        state = {"scans_at_unstall": None, "unstall_ns": 0}

        def unstall_after_a_restart(node):
            # the node has timed out and restarted the scan: let the data flow again
            if fake.scan_starts >= 2 and state["scans_at_unstall"] is None:
                state["unstall_ns"] = time.time_ns()
                fake.stall_after_samples = None
                state["scans_at_unstall"] = len(node.outputs.get("scan", []))

        def recovered(node):
            n = state["scans_at_unstall"]
            return n is not None and len(node.outputs.get("scan", [])) >= n + 2

        node = TimerNode(1000, on_tick=unstall_after_a_restart, until=recovered)
        lidar_rplidar.main(["--lidar", "front", "--config", str(_config(tmp_path, fake.port, read_timeout_s=0.6)),
                            "--no-power-up-delay"], node=node)
    assert recovered(node)
    diags = [decode("Diagnostics", v) for v in node.outputs["diagnostics"]]
    assert any("LidarTimeoutError" in d["last_error"] for d in diags)
    details = json.loads(diags[-1]["details_json"])
    assert details["timeouts"] >= 1 and details["restarts"] + details["connects"] >= 2
    # scans before the stall and after the recovery (stamps are on the host clock)
    stamps = np.array([decode("LaserScan", v)["stamp_ns"] for v in node.outputs["scan"]])
    assert np.count_nonzero(stamps < state["unstall_ns"]) >= 1
    assert np.count_nonzero(stamps > state["unstall_ns"]) >= 2
