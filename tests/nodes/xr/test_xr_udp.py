"""xr UDP node against real datagrams on 127.0.0.1, and the replay sender."""

from __future__ import annotations

import json
import socket
import threading
import time
from pathlib import Path

import pytest
from dora.testing import MockNode

from teledora.nodes.xr import xr_udp
from teledora.operators.contract.messages import decode


class UntilDone(MockNode):
    """A MockNode whose STOP only arrives once ``done`` is set (or a safety bound passes)."""

    def __init__(self, inputs=(), bound_s: float = 10.0):
        super().__init__(list(inputs))
        self.done = threading.Event()
        self._deadline = time.monotonic() + bound_s

    def _waiting(self) -> bool:
        return not self.done.is_set() and time.monotonic() < self._deadline

    def next(self, timeout=None):
        if self._waiting():
            return {"type": "ERROR", "error": "timeout"}  # what dora's next(timeout) returns when nothing came
        return super().next(timeout)

    def drain(self):
        return [] if self._waiting() else super().drain()


def frame(seq, session="s", **kw):
    hand = {"connected": True, "pose_valid": True, "position": [0.3, 0.2, 1.0], "orientation": [0, 0, 0, 1],
            "stick": [0.0, 0.5], "primary": False, "secondary": False, "stick_click": False, "menu": False}
    d = {"version": 1, "session": session, "seq": seq, "sent_ns": time.time_ns(), "frame": "flu",
         "hands": {"left": dict(hand), "right": dict(hand, connected=False)}}
    d.update(kw)
    return json.dumps(d).encode()


def run_node(send, expected_outputs: int, extra_done=lambda node: False):
    backend = xr_udp.UdpFeedBackend("127.0.0.1", 0)
    backend.connect()
    node = UntilDone()

    def watcher():
        while not node.done.is_set():
            if len(node.outputs.get("controllers", [])) >= expected_outputs or extra_done(node):
                node.done.set()
            time.sleep(0.005)

    t = threading.Thread(target=watcher, daemon=True)
    t.start()
    sender = threading.Thread(target=send, args=(backend.port,), daemon=True)
    sender.start()
    xr_udp.main([], node=node, backend=backend)
    node.done.set()
    return node, backend


def test_valid_frames_are_published_and_bad_ones_counted():
    def send(port):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        for data in [frame(1), b"not json", frame(2), frame(2), b"{" + b" " * 5000 + b"}", frame(1, version=9), frame(3)]:
            s.sendto(data, ("127.0.0.1", port))
            time.sleep(0.002)
        s.close()

    node, _ = run_node(send, 3)
    msgs = [decode("XrControllers", v) for v in node.outputs["controllers"]]
    assert [m["seq"] for m in msgs] == [1, 2, 3]
    assert msgs[0]["source"] == "udp" and msgs[0]["left"]["connected"] and not msgs[0]["right"]["connected"]
    assert msgs[0]["left"]["stick"].tolist() == [0.0, 0.5]
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert diag["rejected"] == 3  # not JSON, oversized, wrong version
    assert diag["dropped"] == 1  # duplicate seq 2


def test_second_sender_is_refused_while_the_first_is_active():
    def send(port):
        a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        b = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        a.sendto(frame(1, session="a"), ("127.0.0.1", port))
        time.sleep(0.01)
        b.sendto(frame(1, session="b", focused=False), ("127.0.0.1", port))
        time.sleep(0.01)
        a.sendto(frame(2, session="a"), ("127.0.0.1", port))
        a.close()
        b.close()

    node, backend = run_node(send, 2)
    msgs = [decode("XrControllers", v) for v in node.outputs["controllers"]]
    assert [m["focused"] for m in msgs] == [True, True]
    assert backend.refused == 1


def test_remote_bind_needs_explicit_permission():
    with pytest.raises(xr_udp.RemoteBindRefused):
        xr_udp.main(["--bind", "0.0.0.0"], node=MockNode([]))


def test_send_udp_replays_a_recording(tmp_path: Path):
    rec = tmp_path / "feed.jsonl"
    t0 = 1_000_000_000_000
    lines = []
    for i in range(5):
        d = json.loads(frame(i + 1))
        d["sent_ns"] = t0 + i * 11_000_000
        d["hands"]["left"]["pose_ns"] = d["sent_ns"] - 2_000_000
        d["hands"]["left"]["position"] = [0.3 + 0.01 * i, 0.2, 1.0]
        lines.append(json.dumps(d))
    rec.write_text("# recorded feed\n" + "\n".join(lines) + "\n")

    def send(port):
        from teledora.cli import main as cli

        assert cli(["xr", "send-udp", str(rec), "--port", str(port), "--speed", "10"]) == 0

    node, _ = run_node(send, 5)
    msgs = [decode("XrControllers", v) for v in node.outputs["controllers"]]
    assert [round(m["left"]["position"][0], 6) for m in msgs] == [0.3, 0.31, 0.32, 0.33, 0.34]
    ages = [m["stamp_ns"] - m["left"]["pose_stamp_ns"] for m in msgs]
    assert ages == [2_000_000] * 5  # sender-clock ages carried over onto the host clock


def test_send_udp_rejects_a_bad_recording(tmp_path: Path, capsys):
    rec = tmp_path / "bad.jsonl"
    rec.write_text(frame(1).decode() + "\n{\"version\": 1}\n")
    from teledora.cli import main as cli

    assert cli(["xr", "send-udp", str(rec)]) == 1
    assert "bad.jsonl:2" in capsys.readouterr().err


def test_record_udp_writes_valid_frames_and_skips_bad_ones(tmp_path: Path):
    from teledora.cli import main as cli

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    out = tmp_path / "rec.jsonl"
    result = {}
    t = threading.Thread(target=lambda: result.update(rc=cli(["xr", "record-udp", str(out), "--port", str(port),
                                                              "--count", "2", "--seconds", "20"])))
    t.start()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    deadline = time.monotonic() + 15
    seq = 0
    while t.is_alive() and time.monotonic() < deadline:  # resend until the recorder is listening
        seq += 1
        s.sendto(b"garbage", ("127.0.0.1", port))
        s.sendto(frame(seq), ("127.0.0.1", port))
        t.join(0.05)
    s.close()
    t.join(5)
    lines = out.read_text().splitlines()
    assert result["rc"] == 0 and len(lines) == 2
    assert [json.loads(x)["seq"] for x in lines] == sorted(json.loads(x)["seq"] for x in lines)
