"""The ekf node's ArduPilot variant under a MockNode, against a fake autopilot on 127.0.0.1."""

from __future__ import annotations

import json
import time

import pytest
from dora.testing import MockNode

from teledora import models
from teledora.fakes.ardupilot import FakeArduPilot
from teledora.nodes.estimation import ekf_ardupilot
from teledora.operators.contract.messages import decode, encode

SECTION = models.load_yaml("alohamini2/estimation.yaml")["ardupilot"]
FAST = dict(heartbeat_period_s=0.05, timesync_period_s=0.05, retry_period_s=0.05, origin_wait_s=0.15,
            message_interval_s=0.02, status_interval_s=0.05, origin_lat_deg=48.8566, origin_lon_deg=2.3522,
            origin_alt_m=35.0)


@pytest.fixture
def fake():
    f = FakeArduPilot(heartbeat_period_s=0.05, timesync_period_s=0.05).start()
    yield f
    f.stop()


def flow_msg(stamp_ns: int, fx: float, fy: float, quality: int = 200, h: float = 0.05) -> dict:
    return {"stamp_ns": stamp_ns, "frame_id": "flow_sensor", "flow_rate_x": fx, "flow_rate_y": fy,
            "quality": quality, "ground_distance_m": h, "integration_time_s": 0.02}


class ScriptedNode(MockNode):
    """Hands out its scripted inputs only once the fake autopilot streams, then idles
    (timeout events) until poses came back, like a live dataflow with a flow sensor."""

    def __init__(self, inputs, fake: FakeArduPilot, max_iter: int = 3000):
        super().__init__(inputs)
        self.fake = fake
        self.max_iter = max_iter

    def drain(self):
        return []

    def next(self, timeout=None):
        self.max_iter -= 1
        if self.max_iter <= 0:
            return None
        if any(e.get("type") == "INPUT" for e in self._events):
            if self.fake.origin is not None and len(self.fake.intervals_us) == 3:
                return self._events.popleft()
        elif len(self.outputs.get("pose", [])) >= 5:
            return None
        time.sleep(0.002)
        return {"type": "ERROR", "error": "timeout"}


def test_node_main_publishes_poses_and_diagnostics(fake, tmp_path):
    cfg = models.load_yaml("alohamini2/estimation.yaml")
    cfg["ardupilot"].update(FAST)
    path = tmp_path / "estimation.yaml"
    path.write_text(json.dumps(cfg))
    flows = [("flow", encode("OpticalFlow", flow_msg(k * 20_000_000, 0.0, 1.0))) for k in range(20)]
    bad = ("flow", encode("Gyro", {"stamp_ns": 1, "frame_id": "base_link", "angular_velocity": [0, 0, 0]}))
    gyro = ("gyro", bad[1])
    node = ScriptedNode(flows[:10] + [bad, gyro] + flows[10:], fake)
    ekf_ardupilot.main(["--config", str(path), "--connection", f"udpout:127.0.0.1:{fake.port}", "--poll-s", "0.002"],
                       node=node)
    poses = [decode("PoseEstimate", v) for v in node.outputs["pose"]]
    assert len(poses) >= 5 and all(p["source"] == "ardupilot" for p in poses)
    assert fake.received["OPTICAL_FLOW"] == 20
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["rejected"] == 1 and "OpticalFlow" in diag["last_error"]
    assert '"link_state": "streaming"' in diag["details_json"]


class TimeoutsSeen(ScriptedNode):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.timeouts: list[float | None] = []

    def next(self, timeout=None):
        self.timeouts.append(timeout)
        return super().next(timeout)


def test_the_mavlink_poll_wait_comes_from_estimation_yaml(fake, tmp_path):
    cfg = models.load_yaml("alohamini2/estimation.yaml")
    cfg["ardupilot"].update(FAST)
    cfg["ekf_node"]["mavlink_poll_s"] = 0.003
    path = tmp_path / "estimation.yaml"
    path.write_text(json.dumps(cfg))
    flows = [("flow", encode("OpticalFlow", flow_msg(k * 20_000_000, 0.0, 1.0))) for k in range(10)]
    node = TimeoutsSeen(flows, fake)
    ekf_ardupilot.main(["--config", str(path), "--connection", f"udpout:127.0.0.1:{fake.port}"], node=node)
    assert node.timeouts and set(node.timeouts) == {0.003}
