"""Hardware mocap node against the fake Motive on 127.0.0.1 (real NatNet datagrams)."""

from __future__ import annotations

import json
import math
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from dora.testing import MockNode

from teledora import models
from teledora.models.config_files import load_mocap_config
from teledora.nodes.mocap import mocap_natnet
from teledora.operators.mocap.mocap_config import MocapConfig
from teledora.operators.mocap import natnet_frame as nf
from teledora.operators.mocap import natnet_protocol as nn
from teledora.operators.contract.messages import decode
from teledora.operators.mocap.mocap_frames import MocapFrameTransform
from teledora.operators.geometry import yaw_to_quat
from teledora.fakes.motive import FakeMotive  # noqa: E402

END_MARK = "end-of-test"
TIMEOUT = {"type": "ERROR", "error": "timeout"}  # what dora's next(timeout) returns when nothing came
SAFETY_DEADLINE_S = 20.0  # only stops a broken run from hanging; never reached when the node works


class UntilMarkNode(MockNode):
    """Delivers no input; sends STOP once the node has logged the fake's end mark."""

    def __init__(self) -> None:
        super().__init__([])
        self._events.clear()
        self._deadline = time.monotonic() + SAFETY_DEADLINE_S
        self._stopped = False

    def next(self, timeout=None):
        done = any(END_MARK in entry["message"] for entry in self.logs)
        if not self._stopped and (done or time.monotonic() > self._deadline):
            self._stopped = True
            return {"type": "STOP", "id": "test"}
        return TIMEOUT

    def drain(self):
        """What the node polls between socket reads: STOP once due, else nothing queued."""
        event = self.next()
        return [] if event is TIMEOUT else [event]


def write_config(tmp_path: Path, port: int, natnet: dict | None = None, **body) -> Path:
    cfg = models.load_yaml("alohamini2/mocap.yaml")
    cfg["natnet"].update({
        "server_address": "127.0.0.1", "command_port": port, "local_address": "127.0.0.1",
        "connect_retry_s": 0.05, "echo_period_s": 0.02, "keepalive_period_s": 0.05, "model_def_retry_s": 0.05,
        **(natnet or {}),
    })
    if body:
        cfg["rigid_body"] = {"id": None, "name": None, **body}
    path = tmp_path / "mocap.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def run_node(fake: FakeMotive, config: Path, script) -> tuple[MockNode, list]:
    """Runs the node while ``script(fake)`` streams; returns the node and what the script returned."""
    node = UntilMarkNode()
    result: list = []

    def drive() -> None:
        if fake.wait_for_client():
            time.sleep(0.1)  # let the echo/model-def exchange settle (the node copes either way)
            result.append(script(fake))
        fake.send_raw(nn.build_packet(nn.MessageId.MESSAGE_STRING, END_MARK.encode() + b"\0"))

    t = threading.Thread(target=drive, daemon=True)
    t.start()
    mocap_natnet.main(["--config", str(config)], node=node)
    t.join(timeout=5)
    return node, result


def trajectory(n: int):
    """Robot driving a quarter circle, as Motive (Y-up) sees it."""
    tf = MocapFrameTransform(load_mocap_config().frame)
    out, world = [], []
    for i in range(n):
        a = 0.5 * np.pi * i / n
        p_world = np.array([np.cos(a), np.sin(a), 0.0])
        q_world = yaw_to_quat(a + np.pi / 2)
        out.append(tf.motive_pose_of_base(p_world, q_world))
        world.append((p_world, a + np.pi / 2))
    return out, world


def test_streams_poses_with_dropouts_and_invalid_tracking(tmp_path):
    poses, world = trajectory(60)
    drop, invalid = {10, 11, 12, 40}, {20, 21, 22, 23}
    with FakeMotive(rigid_bodies={"cart": 2, "alohamini2": 3}, exposure_to_transmit_s=0.25) as fake:
        node, (sent,) = run_node(fake, write_config(tmp_path, fake.command_port),
                                 lambda f: f.stream(poses, body_id=3, drop=drop, invalid=invalid))
    msgs = [decode("MocapPose", v) for v in node.outputs["pose"]]
    assert len(msgs) == len(sent) == 60 - len(drop)
    assert [m["frame_number"] for m in msgs] == [s.frame_number for s in sent]
    kept = [i for i in range(60) if i not in drop]
    for i, m in zip(kept, msgs):
        assert m["rigid_body_id"] == 3 and m["name"] == "alohamini2" and m["frame_id"] == models.load_profile().world_frame
        if i in invalid:
            assert m["tracking_valid"] is False and math.isnan(m["position"][0])
        else:
            assert m["tracking_valid"] is True
            assert m["position"] == pytest.approx(world[i][0], abs=1e-5)
            yaw = 2 * math.atan2(m["orientation"][2], m["orientation"][3])
            assert math.remainder(yaw - world[i][1], 2 * math.pi) == pytest.approx(0.0, abs=1e-5)
    # stamps are mid-exposure on the host clock: 250 ms before transmission, 1 h off Motive's clock
    err_ms = [(m["stamp_ns"] - s.exposure_host_ns) / 1e6 for m, s in zip(msgs, sent)]
    assert max(abs(e) for e in err_ms) < 100.0
    diag = json.loads(decode("Diagnostics", node.outputs["diagnostics"][-1])["details_json"])
    assert diag["dropped_frames"] == len(drop)
    assert diag["poses_invalid"] == len(invalid)
    assert diag["clock_source"] == "echo"
    assert nn.MessageId.ECHO_REQUEST in fake.requests and nn.MessageId.REQUEST_MODEL_DEF in fake.requests
    assert any("clock offset" in e["message"] for e in node.logs)


@pytest.mark.parametrize("version", [(3, 0, 0, 0), (3, 1, 0, 0), (4, 0, 0, 0), (4, 1, 0, 0), (4, 2, 0, 0)],
                         ids=lambda v: f"{v[0]}.{v[1]}")
def test_body_name_resolves_from_motive_model_def(tmp_path, version):
    """Motive's MODEL_DEF (marker sets first, rotated pivots) names the body in every supported version."""
    poses, world = trajectory(10)
    with FakeMotive(natnet_version=version, rigid_bodies={"cart": 2, "alohamini2": 5}) as fake:
        def script(f: FakeMotive):
            deadline = time.monotonic() + 5.0  # frames before the name resolves are (rightly) not published
            while nn.MessageId.REQUEST_MODEL_DEF not in f.requests and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.1)
            return f.stream(poses, body_id=5)

        node, (sent,) = run_node(fake, write_config(tmp_path, fake.command_port), script)
    msgs = [decode("MocapPose", v) for v in node.outputs.get("pose", [])]
    assert [m["frame_number"] for m in msgs] == [s.frame_number for s in sent]
    assert all(m["rigid_body_id"] == 5 and m["name"] == "alohamini2" for m in msgs)
    assert msgs[-1]["position"] == pytest.approx(world[-1][0], abs=1e-5)
    assert any("rigid body 'alohamini2' is id 5" in e["message"] for e in node.logs)


def test_truncated_and_corrupted_packets_are_counted_not_fatal(tmp_path):
    poses, _ = trajectory(4)

    def script(f: FakeMotive):
        sent = f.stream(poses[:2], body_id=3)
        good = nf.build_frame_of_data(nf.FrameOfData(100, ()), (4, 1, 0, 0))
        f.send_raw(good[: len(good) - 9])  # truncated
        bad = bytearray(good)
        bad[4 + 20] = 0xFF  # corrupted rigid-body count
        f.send_raw(bytes(bad))
        f.send_raw(b"\x07")  # shorter than a header
        f.send_raw(nn.build_packet(55, b"??"))  # unknown message id
        return sent + f.stream(poses[2:], body_id=3)

    with FakeMotive() as fake:
        node, (sent,) = run_node(fake, write_config(tmp_path, fake.command_port, id=3), script)
    msgs = [decode("MocapPose", v) for v in node.outputs["pose"]]
    assert [m["frame_number"] for m in msgs] == [s.frame_number for s in sent]
    assert all(m["tracking_valid"] for m in msgs)
    last = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert last["rejected"] == 4
    reasons = json.loads(last["details_json"])["rejected_by_reason"]
    assert sum(reasons.values()) == 4
    assert any("rejected datagram" in e["message"] for e in node.logs)


def test_multicast_stream_on_loopback(tmp_path):
    import socket

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    data_port = probe.getsockname()[1]
    probe.close()
    poses, _ = trajectory(10)
    group = "239.255.42.99"
    with FakeMotive(multicast_group=group, data_port=data_port) as fake:
        config = write_config(tmp_path, fake.command_port, {"multicast": True, "multicast_group": group,
                                                            "data_port": data_port}, id=3)
        node, (sent,) = run_node(fake, config, lambda f: f.stream(poses, body_id=3))
    msgs = [decode("MocapPose", v) for v in node.outputs["pose"]]
    assert [m["frame_number"] for m in msgs] == [s.frame_number for s in sent]
    assert nn.MessageId.KEEP_ALIVE not in fake.requests  # multicast needs no keep-alive


def test_version_mismatch_reported_and_nothing_published(tmp_path):
    poses, _ = trajectory(5)
    with FakeMotive(natnet_version=(2, 10, 0, 0)) as fake:
        node, _ = run_node(fake, write_config(tmp_path, fake.command_port, id=3), lambda f: f.stream(poses))
    assert "pose" not in node.outputs
    last = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert last["level"] == "error" and "2.10.0.0 is not supported" in last["message"]
    assert last["rejected"] == 5


def test_waits_for_motive_without_crashing(tmp_path):
    """No server: the node keeps retrying CONNECT and reports it is waiting."""
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    connects = []

    class StopAfterRetries(MockNode):
        def __init__(self):
            super().__init__([])
            self._events.clear()
            self.stopped = False

        def next(self, timeout=None):
            if self.stopped:
                return None
            s.setblocking(False)
            try:
                while True:
                    connects.append(nn.split_packet(s.recv(2048)).message_id)
            except BlockingIOError:
                pass
            self.stopped = connects.count(nn.MessageId.CONNECT) >= 2
            return {"type": "STOP", "id": "t"} if self.stopped else TIMEOUT

        def drain(self):
            event = self.next()
            return [] if event is TIMEOUT or event is None else [event]

    mocap_natnet.main(["--config", str(write_config(tmp_path, port))], node=StopAfterRetries())
    s.close()
    assert connects.count(nn.MessageId.CONNECT) >= 2


def test_shipped_config_parses():
    cfg = load_mocap_config()
    net = cfg.natnet
    assert net.command_port == 1510 and net.natnet_version == (4, 1, 0, 0) and net.multicast is False
    assert cfg.frame.axis_map == ("x", "-z", "y")
    raw = models.load_yaml("alohamini2/mocap.yaml")
    with pytest.raises(ValueError, match=r"natnet: unknown keys \['port'\]"):
        MocapConfig.from_mapping({**raw, "natnet": {**raw["natnet"], "port": 1}})
