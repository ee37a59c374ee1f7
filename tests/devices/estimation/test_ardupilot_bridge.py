"""The ArduPilot bridge and its MAVLink link end to end through real MAVLink bytes against a
fake autopilot on 127.0.0.1.

Waits in these tests are for datagrams to cross the loopback (bounded loops that
stop as soon as a condition holds); no assertion depends on how long anything took.
Link-loss timeouts run on an injected clock that the test moves forward.
"""

from __future__ import annotations

import math
import socket
import time
from dataclasses import replace

import numpy as np
import pytest

from teledora import models
from teledora.devices.estimation.ardupilot_bridge import ArduPilotBridge
from teledora.models.config_files import load_estimation_config
from teledora.operators.estimation.ardupilot_bridge_config import BridgeConfig
from teledora.devices.estimation.mavlink_link import ArduPilotLink
from teledora.fakes.ardupilot import FakeArduPilot
from teledora.operators.contract.messages import encode
from teledora.operators.estimation.autopilot_session import LinkState, SessionConfig
from teledora.operators.estimation.flow_model import FlowModel
from teledora.operators.errors import ConfigError

ODOM_FRAME = "odom_test"  # any name: the bridge publishes in the frame it is given
SECTION = models.load_yaml("alohamini2/estimation.yaml")["ardupilot"]
FAST = dict(heartbeat_period_s=0.05, timesync_period_s=0.05, retry_period_s=0.05, origin_wait_s=0.15,
            message_interval_s=0.02, status_interval_s=0.05, origin_lat_deg=48.8566, origin_lon_deg=2.3522,
            origin_alt_m=35.0)


class SkewClock:
    """Host clock that a test can move forward (to expire link timeouts without sleeping)."""

    def __init__(self) -> None:
        self.skew_ns = 0

    def __call__(self) -> int:
        return time.time_ns() + self.skew_ns


def wait_until(bridge: ArduPilotBridge, cond, poses: list | None = None, max_iter: int = 1500) -> bool:
    """Polls the bridge until ``cond()`` holds (bounded); collects poses."""
    for _ in range(max_iter):
        got = bridge.poll()
        if poses is not None:
            poses.extend(got)
        if cond():
            return True
        time.sleep(0.002)
    return False


@pytest.fixture
def fake():
    f = FakeArduPilot(heartbeat_period_s=0.05, timesync_period_s=0.05).start()
    yield f
    f.stop()


def make_bridge(fake: FakeArduPilot, clock=time.time_ns, **kw) -> ArduPilotBridge:
    cfg = BridgeConfig.from_dict({**SECTION, "connection": f"udpout:127.0.0.1:{fake.port}", **FAST, **kw})
    return ArduPilotBridge(cfg, ArduPilotLink(cfg.connection), ODOM_FRAME, clock)


def streaming(bridge):
    return lambda: bridge.session.state is LinkState.STREAMING


def flow_msg(stamp_ns: int, fx: float, fy: float, quality: int = 200, h: float = 0.05) -> dict:
    return {"stamp_ns": stamp_ns, "frame_id": "flow_sensor", "flow_rate_x": fx, "flow_rate_y": fy,
            "quality": quality, "ground_distance_m": h, "integration_time_s": 0.02}


def test_config_from_the_shipped_yaml_splits_session_and_bridge_settings():
    section = SECTION
    cfg = BridgeConfig.from_dict(section)
    assert cfg.connection == section["connection"] and cfg.origin_lat_deg == section["origin_lat_deg"]
    assert cfg.send_distance_sensor is section["send_distance_sensor"]
    assert cfg.session == SessionConfig(
        heartbeat_timeout_s=section["heartbeat_timeout_s"], link_timeout_s=section["link_timeout_s"],
        reconnect_delay_s=section["reconnect_delay_s"], heartbeat_period_s=section["heartbeat_period_s"],
        timesync_period_s=section["timesync_period_s"], retry_period_s=section["retry_period_s"],
        origin_wait_s=section["origin_wait_s"], set_origin=section["set_origin"],
        stream_timeout_s=section["stream_timeout_s"],
        streams={32: section["message_interval_s"], 30: section["message_interval_s"],
                 193: section["status_interval_s"]})
    # the shipped periods request pose and attitude at 20 Hz, EKF status at 2 Hz
    assert cfg.session.streams == {32: 0.05, 30: 0.05, 193: 0.5}
    # every key is required: the file is the one source of these values
    with pytest.raises(ValueError, match=r"ardupilot: missing key connection"):
        BridgeConfig.from_dict({})


def test_config_rejects_unknown_keys_and_invalid_session_timings():
    with pytest.raises(ValueError, match=r"ardupilot: unknown keys \['link_timeout'\]"):
        BridgeConfig.from_dict({**SECTION, "link_timeout": 3.0})
    with pytest.raises(ValueError, match="link_timeout_s must be > 0"):
        BridgeConfig.from_dict({**SECTION, "link_timeout_s": 0.0})
    with pytest.raises(ValueError, match="period must be > 0"):
        BridgeConfig.from_dict({**SECTION, "status_interval_s": 0.0})


def test_handshake_without_gps_sets_origin_and_requests_streams(fake):
    bridge = make_bridge(fake)
    try:
        assert wait_until(bridge, lambda: streaming(bridge)() and bridge.status()["position_ok"])
        assert fake.origin == (488566000, 23522000, 35000) and fake.origin_sets >= 1
        assert fake.intervals_us == {32: 20_000, 30: 20_000, 193: 50_000}
        assert fake.received["HEARTBEAT"] >= 1
        st = bridge.status()
        assert st["origin_set_by_us"] and st["position_ok"] and st["connects"] == 1
    finally:
        bridge.close()


def test_handshake_with_gps_origin_keeps_it():
    with FakeArduPilot(has_gps_origin=True, heartbeat_period_s=0.05) as f:
        bridge = make_bridge(f)
        try:
            assert wait_until(bridge, streaming(bridge))
            assert f.origin_sets == 0 and f.received["SET_GPS_GLOBAL_ORIGIN"] == 0
            assert not bridge.status()["origin_set_by_us"]
        finally:
            bridge.close()


def test_flow_in_pose_out_matches_the_autopilot_estimate(fake):
    bridge = make_bridge(fake)
    poses: list = []
    try:
        assert wait_until(bridge, streaming(bridge))
        assert bridge.on_flow(flow_msg(0, 0.0, 0.0))  # link is up: accepted
        t0 = 1_000_000_000
        # 2 s of driving forward at 0.05 m/s (flow_y = v/h = 1 rad/s) in 50 Hz reports
        for k in range(101):
            assert bridge.on_flow(flow_msg(t0 + k * 20_000_000, 0.0, 1.0))
        assert wait_until(bridge, lambda: fake.received["OPTICAL_FLOW"] >= 102)
        assert fake.north == pytest.approx(0.1, rel=1e-3)
        sent = fake.flows[-1]
        assert (sent.flow_rate_x, sent.flow_rate_y, sent.quality) == (0.0, 1.0, 200)
        assert sent.ground_distance == pytest.approx(0.05) and sent.time_usec == (t0 + 100 * 20_000_000) // 1000
        assert fake.height_m == pytest.approx(0.05)  # DISTANCE_SENSOR in cm, pointing down
        assert wait_until(bridge, lambda: poses and poses[-1]["x"] == pytest.approx(0.1, rel=1e-3), poses)
        last = poses[-1]
        assert last["source"] == "ardupilot" and last["frame_id"] == ODOM_FRAME
        assert last["y"] == pytest.approx(0.0, abs=1e-9) and last["vx"] == pytest.approx(0.05, rel=1e-3)
        encode("PoseEstimate", last)
    finally:
        bridge.close()


@pytest.mark.parametrize("std_m, covariance", [(None, 255), (0.002, 1), (0.03, 10)])
def test_distance_sensor_carries_the_variance_or_unknown(fake, std_m, covariance):
    """DISTANCE_SENSOR.covariance is cm² (255 = unknown); 0 would claim a perfect reading."""
    bridge = make_bridge(fake, distance_sensor_std_m=std_m, distance_sensor_range_m=[0.01, 1.0])
    try:
        assert wait_until(bridge, streaming(bridge))
        assert bridge.on_flow(flow_msg(1_000_000_000, 0.0, 0.0, h=0.052))
        assert wait_until(bridge, lambda: len(fake.distance_sensors) >= 1)
        d = fake.distance_sensors[-1]
        assert (d.current_distance, d.min_distance, d.max_distance) == (5, 1, 100)
        assert d.covariance == covariance
    finally:
        bridge.close()


def test_distance_sensor_settings_are_checked():
    with pytest.raises(ConfigError, match="distance_sensor_std_m"):
        BridgeConfig.from_dict({**SECTION, "distance_sensor_std_m": -0.01})
    with pytest.raises(ConfigError, match="distance_sensor_range_m"):
        BridgeConfig.from_dict({**SECTION, "distance_sensor_range_m": [0.1, 0.05]})


def test_flow_model_agrees_with_autopilot_spin_in_place(fake):
    """Our flow model (FLU) and the fake's ArduPilot equations (FRD) describe the same sensor:
    a spin with the mount offset must not move the autopilot's estimate."""
    model = FlowModel(replace(load_estimation_config().flow_sensor, offset_m=(0.08, 0.05, 0.05)))
    bridge = make_bridge(fake)
    try:
        assert wait_until(bridge, streaming(bridge))
        wz = 0.8
        fake.imu_yaw_rate_frd = -wz  # FLU +z is FRD -z
        fx, fy = model.sensor_flow(model.body_flow(0.0, 0.0, wz, 0.05))
        for k in range(101):
            bridge.on_flow(flow_msg(k * 20_000_000, fx, fy))
        assert wait_until(bridge, lambda: fake.received["OPTICAL_FLOW"] >= 101)
        assert math.hypot(fake.north, fake.east) < 1e-6
        assert fake.yaw_ned == pytest.approx(math.remainder(-wz * 2.0, 2 * math.pi), abs=1e-6)
    finally:
        bridge.close()


def test_timesync_maps_autopilot_time_onto_host_clock():
    offset = 123_456_789_000  # host time minus autopilot boot time
    with FakeArduPilot(heartbeat_period_s=0.05, boot_clock_ns=lambda: time.time_ns() - offset,
                       report_delay_ms=400) as f:
        bridge = make_bridge(f)
        poses: list = []
        try:
            assert wait_until(bridge, lambda: streaming(bridge)() and bridge.mav_clock.synced and len(poses) > 3,
                              poses)
            clk = bridge.mav_clock
            # the mapping is exact up to half the round trip of the exchange it uses
            assert abs(clk.offset_ns - (-offset)) <= clk.round_trip_ns // 2 + 1_000_000  # + boot_ms truncation
            # pose stamps are the autopilot's measurement times mapped onto the host clock: the
            # fake reports each pose 400 ms after its time_boot_ms, so a stamp taken at reception
            # would be 400 ms too late
            poses.clear()
            assert wait_until(bridge, lambda: len(poses) > 0, poses)
            assert poses[-1]["stamp_ns"] <= time.time_ns() - 300_000_000
            # the bridge also answers the autopilot's own TIMESYNC requests
            assert wait_until(bridge, lambda: len(f.peer_timesync_offsets_ns) > 0)
            assert abs(f.peer_timesync_offsets_ns[-1] - offset) <= 500_000_000  # the fake accepts RTT < 1 s
            assert bridge.status()["clock_offset_ns"] == clk.offset_ns
        finally:
            bridge.close()


def test_link_loss_and_recovery_without_restart(fake):
    clock = SkewClock()
    bridge = make_bridge(fake, clock, link_timeout_s=3.0, reconnect_delay_s=1.0)
    try:
        assert wait_until(bridge, streaming(bridge))
        fake.silent = True
        clock.skew_ns += 3_500_000_000  # 3.5 s without a heartbeat
        bridge.poll()
        assert bridge.session.state is LinkState.LOST
        assert not bridge.on_flow(flow_msg(1, 0.0, 0.0)) and bridge.flows_dropped == 1
        clock.skew_ns += 1_100_000_000
        bridge.poll()  # reconnects: a new socket
        assert bridge.session.state is LinkState.WAITING_HEARTBEAT
        fake.silent = False
        assert wait_until(bridge, streaming(bridge))
        st = bridge.status()
        assert st["connects"] == 2 and st["link_losses"] == 1
        poses: list = []
        assert wait_until(bridge, lambda: len(poses) > 0, poses)
    finally:
        bridge.close()


def test_autopilot_reboot_restores_origin_and_streams(fake):
    bridge = make_bridge(fake, stream_timeout_s=0.3)
    try:
        assert wait_until(bridge, streaming(bridge))
        fake.reboot()  # origin and stream rates forgotten, heartbeats continue
        assert wait_until(bridge, lambda: fake.origin is not None and len(fake.intervals_us) == 3
                          and bridge.session.state is LinkState.STREAMING and bridge.session.stream_stalls > 0)
        assert fake.origin_sets >= 2
    finally:
        bridge.close()


def test_garbage_datagrams_are_survived(fake):
    bridge = make_bridge(fake)
    junk = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        assert wait_until(bridge, streaming(bridge))
        rng = np.random.default_rng(1)
        for _ in range(20):
            blob = rng.integers(0, 256, 60, dtype=np.uint8).tobytes()
            junk.sendto(blob, ("127.0.0.1", fake.port))
            junk.sendto(b"\xfd" + blob, bridge.link.local_address())  # looks like MAVLink 2, is not
        poses: list = []
        n0 = fake.received["OPTICAL_FLOW"]
        for k in range(5):
            bridge.on_flow(flow_msg(k * 20_000_000, 0.0, 0.5))
        assert wait_until(bridge, lambda: fake.garbage >= 20 and bridge.link.bad_data > 0
                          and fake.received["OPTICAL_FLOW"] >= n0 + 5 and len(poses) > 2, poses)
        assert bridge.session.state is LinkState.STREAMING
    finally:
        junk.close()
        bridge.close()


def test_serial_link_over_a_pty():
    """The same bridge over a serial device (pyserial on a pseudo-terminal)."""
    with FakeArduPilot(heartbeat_period_s=0.05, serial=True) as f:
        cfg = BridgeConfig.from_dict({**SECTION, "connection": f.device, "baud": 115200, **FAST})
        bridge = ArduPilotBridge(cfg, ArduPilotLink(cfg.connection, cfg.baud), ODOM_FRAME)
        poses: list = []
        try:
            assert wait_until(bridge, lambda: streaming(bridge)() and len(poses) > 0, poses)
            for k in range(3):
                assert bridge.on_flow(flow_msg(k * 20_000_000, 0.0, 1.0))
            assert wait_until(bridge, lambda: f.received["OPTICAL_FLOW"] == 3)
            assert bridge.link.local_address() is None
        finally:
            bridge.close()


def test_missing_serial_device_is_retried_not_fatal(tmp_path):
    clock = SkewClock()
    cfg = BridgeConfig.from_dict({**SECTION, "connection": str(tmp_path / "ttyACM9"), "reconnect_delay_s": 1.0})
    bridge = ArduPilotBridge(cfg, ArduPilotLink(cfg.connection), ODOM_FRAME, clock)
    assert bridge.poll() == []
    assert bridge.session.state is LinkState.LOST and "cannot open" in bridge.last_error
    bridge.poll()  # within the reconnect delay: no new attempt
    clock.skew_ns += 1_100_000_000
    bridge.poll()
    assert bridge.session.state is LinkState.LOST and bridge.session.connects == 0
    assert not bridge.on_flow(flow_msg(1, 0.0, 0.0))
