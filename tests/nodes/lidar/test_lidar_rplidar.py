"""The RPLIDAR A1 hardware node against the pty fake that speaks the device's bytes."""

from __future__ import annotations

import json
import time

import pytest
from pathlib import Path

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

from teledora import models
from teledora.nodes.lidar import lidar_rplidar
from teledora.operators.contract.messages import decode
from teledora.fakes.rplidar_a1 import FakeRplidarA1, SyntheticRoom  # noqa: E402
from teledora.operators.lidar.laser_scan import LaserScan

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


def _config(tmp_path, port: str, read_timeout_s: float = 2.0, power_up_delay_s: float = 0.0, **hardware) -> Path:
    cfg = models.load_yaml("alohamini2/lidar.yaml")
    cfg["lidars"]["front"]["port"] = port
    cfg["lidars"]["front"]["power_up_delay_s"] = power_up_delay_s
    # a long revolution timeout where the watchdog is not the subject (a loaded machine may slow the fake)
    cfg["hardware"].update(read_timeout_s=read_timeout_s, stop_settle_s=0.1, **{"revolution_timeout_s": 10.0, **hardware})
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
        state = {"scans_at_unstall": None, "unstall_ns": 0, "starts_at_stall": None}

        def unstall_after_a_restart(node):
            if fake.samples_sent >= 1500 and state["starts_at_stall"] is None:
                state["starts_at_stall"] = fake.scan_starts  # (a busy machine may restart earlier, on overflow)
            # the node has timed out and restarted the scan: let the data flow again
            stalled_at = state["starts_at_stall"]
            if stalled_at is not None and fake.scan_starts > stalled_at and state["scans_at_unstall"] is None:
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
    assert any("LidarTimeoutError" in d["last_error"] for d in diags), {d["last_error"] for d in diags}
    details = json.loads(diags[-1]["details_json"])
    assert details["timeouts"] >= 1 and details["restarts"] + details["connects"] >= 2
    # scans before the stall and after the recovery (stamps are on the host clock)
    stamps = np.array([decode("LaserScan", v)["stamp_ns"] for v in node.outputs["scan"]])
    assert np.count_nonzero(stamps < state["unstall_ns"]) >= 1
    assert np.count_nonzero(stamps > state["unstall_ns"]) >= 2


def _diags(node) -> list[dict]:
    return [decode("Diagnostics", v) for v in node.outputs.get("diagnostics", [])]


def _run(tmp_path, fake, node, *extra, **config) -> None:
    lidar_rplidar.main(["--lidar", "front", "--config", str(_config(tmp_path, fake.port, **config)), *extra], node=node)


@pytest.mark.parametrize("rate_hz, reason", [(0.0, "motor not turning"), (0.8, "motor too slow")])
def test_frozen_or_slow_motor_is_an_error_not_ok_or_connecting(tmp_path, rate_hz, reason):
    with FakeRplidarA1(**FAKE_RATE) as fake:
        def motor_fails_after_two_scans(node):
            if len(node.outputs.get("scan", [])) >= 2:
                fake.scan_rate_hz = rate_hz

        node = TimerNode(1000, on_tick=motor_fails_after_two_scans,
                         until=lambda n: any(reason in d["last_error"] for d in _diags(n)))
        _run(tmp_path, fake, node, "--no-power-up-delay", revolution_timeout_s=1.0)
    diags = _diags(node)
    hit = next(d for d in diags if reason in d["last_error"])
    assert hit["level"] == "error" and "LidarWatchdogError" in hit["last_error"]
    details = json.loads(diags[-1]["details_json"])
    assert details["watchdog_faults"] >= 1 and details["held_samples"] <= 2000
    assert len(node.outputs["scan"]) == 2  # nothing published while the motor is wrong


def test_restart_budget_is_honoured_then_the_node_stays_in_error(tmp_path):
    with FakeRplidarA1(silent=True, **FAKE_RATE) as fake:
        node = TimerNode(400, period_s=0.01)  # ~4 s of ticks plus the timeouts: well past the budget
        _run(tmp_path, fake, node, "--no-power-up-delay", read_timeout_s=0.2, max_restarts=2)
        connects = fake.requests.count(0x50)
    diags = _diags(node)
    last = diags[-1]
    assert connects == 3  # the first connect and max_restarts retries, then no more
    assert last["level"] == "error" and "gave up after 2 restarts" in last["message"]
    assert "did not answer GET_INFO" in last["last_error"]
    assert json.loads(last["details_json"])["gave_up"] is True


def test_power_up_stagger_is_applied_on_every_reconnect(tmp_path):
    delay_s = 5.0  # well past the back-offs before a reopen without the delay (0.4 + 0.8 + 1.6 s)
    with FakeRplidarA1(**FAKE_RATE) as fake:
        state = {"unplug_ns": None, "scans_at_replug": None}

        def unplug_then_replug(node):
            scans = len(node.outputs.get("scan", []))
            if state["unplug_ns"] is None and scans >= 2:
                state["unplug_ns"] = time.time_ns()
                fake.unplug()
            elif state["unplug_ns"] is not None and not fake.plugged and time.time_ns() - state["unplug_ns"] > 0.2e9:
                fake.replug()
                state["scans_at_replug"] = scans

        def recovered(node):
            n = state["scans_at_replug"]
            return n is not None and len(node.outputs.get("scan", [])) >= n + 2

        node = TimerNode(2000, on_tick=unplug_then_replug, until=recovered)
        start_ns = time.time_ns()
        _run(tmp_path, fake, node, power_up_delay_s=delay_s)
        info_times = [t for c, t in zip(fake.requests, fake.request_times_ns) if c == 0x50]
    assert recovered(node)
    assert info_times[0] - start_ns >= delay_s * 1e9  # first connect
    reconnects = [t for t in info_times if t > state["unplug_ns"]]
    assert reconnects and all(t - state["unplug_ns"] >= delay_s * 1e9 for t in reconnects), [(t - state["unplug_ns"]) * 1e-9 for t in info_times]


def _spiked_rays(scan: LaserScan, room: SyntheticRoom) -> int:
    """Finite rays at least 0.5 m nearer than anything the room has within a sector of them."""
    count = 0
    for a, r in zip(scan.angles(), scan.ranges):
        if np.isfinite(r):
            nearest = min(room.distance(a + d) for d in np.radians([-0.6, -0.3, 0.0, 0.3, 0.6]))
            count += int(r < nearest - 0.5)
    return count


def test_isolated_range_spikes_are_set_to_nan_counted_and_raise_the_level(tmp_path):
    """Samples a metre short with intact angle and check bits (a flipped distance bit): the
    first turn has nothing to be judged against and keeps them; every later turn rejects them."""
    room = SyntheticRoom()
    # every 97th of 300 samples a turn: each turn's spikes lie >= 10.8 degrees from those of
    # the 5 turns before it (a spike there would vouch for them, as a real object would)
    with FakeRplidarA1(room, distance_spike_every_samples=97, **FAKE_RATE) as fake:
        node = TimerNode(1000, until=lambda n: len(n.outputs.get("scan", [])) >= 5)
        _run(tmp_path, fake, node, "--no-power-up-delay")
    scans = [LaserScan.from_message(decode("LaserScan", v)) for v in node.outputs["scan"]]
    spiked = [_spiked_rays(s, room) for s in scans]
    # a turn is judged when the one before it was published at most previous_max_age_s
    # earlier (a loaded machine can make the reader fall behind and restart)
    judged = [0 < (b.stamp_ns - a.stamp_ns) * 1e-9 <= 0.5 for a, b in zip(scans, scans[1:])]
    assert len(scans) >= 5 and fake.distance_spikes >= 12 and sum(judged) >= 3
    assert spiked[0] >= 2 and all(n == 0 for n, j in zip(spiked[1:], judged) if j), spiked
    diags = _diags(node)
    details = json.loads(diags[-1]["details_json"])
    assert details["outliers_rejected"] >= 2 * sum(judged)  # ~3.1 spikes in each turn
    assert diags[-1]["level"] == "warn" and "range outlier(s) set to NaN" in diags[-1]["message"]


def test_with_the_outlier_filter_off_the_spikes_are_published(tmp_path):
    room = SyntheticRoom()
    cfg = models.load_yaml("alohamini2/lidar.yaml")
    cfg["lidars"]["front"]["port"] = "unused"
    cfg["hardware"].update(read_timeout_s=2.0, stop_settle_s=0.1, revolution_timeout_s=10.0)
    cfg["outlier_filter"] = None
    path = tmp_path / "off.yaml"
    path.write_text(json.dumps(cfg))
    with FakeRplidarA1(room, distance_spike_every_samples=97, **FAKE_RATE) as fake:
        node = TimerNode(1000, until=lambda n: len(n.outputs.get("scan", [])) >= 3)
        lidar_rplidar.main(["--lidar", "front", "--config", str(path), "--port", fake.port, "--no-power-up-delay"],
                           node=node)
    scans = [LaserScan.from_message(decode("LaserScan", v)) for v in node.outputs["scan"]]
    assert all(_spiked_rays(s, room) >= 2 for s in scans[1:])
    diag = _diags(node)[-1]
    assert diag["level"] == "ok" and json.loads(diag["details_json"])["outliers_rejected"] is None
