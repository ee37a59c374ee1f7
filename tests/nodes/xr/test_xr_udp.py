"""xr UDP node against real datagrams on 127.0.0.1, and the replay/record tools."""

from __future__ import annotations

import json
import secrets
import socket
import threading
import time
from pathlib import Path

import pytest
from dora.testing import MockNode

from teledora.devices.xr.udp_feed import UdpFeedSender
from teledora.fakes.xr_feed_fuzz import message_violations
from teledora.nodes.xr import xr_udp
from teledora.operators.contract.messages import decode
from teledora.operators.xr.udp_envelope import feed_key, seal

TOKEN = "udp-test-token"
KEY = feed_key(TOKEN)


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


class Sender:
    """A sender session speaking the feed's protocol (the device's sender:
    it pairs with the node on first use, and again after a restart)."""

    def __init__(self) -> None:
        self.dev: UdpFeedSender | None = None

    def at(self, port: int) -> UdpFeedSender:
        if self.dev is None:
            self.dev = UdpFeedSender("127.0.0.1", port, TOKEN)
            self.dev.connect()
        return self.dev

    def seal(self, port: int, payload: bytes) -> bytes:
        """The next datagram, numbered and sealed but not sent."""
        dev = self.at(port)
        if not dev.link.paired:
            dev.pair()
        return dev.link.seal(payload, time.time_ns())

    def send(self, port: int, payload: bytes, seq: int | None = None) -> bytes:
        return self.at(port).send(payload, seq)

    def raw(self, port: int, datagram: bytes) -> None:
        self.at(port).sock.send(datagram)


def run_node(send, done=lambda node: False, takeover_s: float = 1.0, bound_s: float = 10.0, port: int = 0):
    backend = xr_udp.UdpFeedBackend("127.0.0.1", port, TOKEN, takeover_s)
    backend.connect()
    node = UntilDone(bound_s=bound_s)
    finished = threading.Event()

    def sender():
        send(backend.port)
        finished.set()

    def watcher():
        while not node.done.is_set():
            if finished.is_set() and done(node):
                node.done.set()
            time.sleep(0.005)

    threading.Thread(target=watcher, daemon=True).start()
    threading.Thread(target=sender, daemon=True).start()
    xr_udp.main([], node=node, backend=backend)
    node.done.set()
    return node, backend


def published(node) -> list[dict]:
    return [decode("XrControllers", v) for v in node.outputs.get("controllers", [])]


def last_diag(node) -> tuple[dict, dict]:
    diag = decode("Diagnostics", node.outputs["diagnostics"][-1])
    return diag, json.loads(diag["details_json"])


def n_published(n):
    return lambda node: len(node.outputs.get("controllers", [])) >= n


def test_valid_frames_are_published_and_bad_ones_counted_by_reason():
    def send(port):
        s = Sender()
        for payload in [frame(1), b"not json", frame(2), frame(2), b"[" * 3000, frame(1, version=9),
                        frame(3, sent_ns=time.time_ns() + 1000 * 10**9), frame(4)]:
            s.send(port, payload)
            time.sleep(0.002)

    node, _ = run_node(send, n_published(3))
    msgs = published(node)
    assert [m["seq"] for m in msgs] == [1, 2, 3]
    assert msgs[0]["source"] == "udp" and msgs[0]["left"]["connected"] and not msgs[0]["right"]["connected"]
    assert msgs[0]["left"]["stick"].tolist() == [0.0, 0.5]
    diag, details = last_diag(node)
    assert details["rejected_by_reason"] == {"not_json": 1, "too_deep": 1, "version": 1, "future_stamp": 1}
    assert diag["rejected"] == 4 and diag["dropped"] == 1  # the duplicate seq 2 is dropped, not rejected


def test_unauthenticated_replayed_and_stale_datagrams_are_refused_before_parsing():
    def send(port):
        good = Sender()
        first = good.send(port, frame(1))
        link = good.dev.link
        good.raw(port, seal(feed_key("another run's token"), link.nonce, link.session, 2, time.time_ns(), frame(2)))
        good.raw(port, first)  # a replay of a datagram the node took
        good.raw(port, b"[" * 3000)  # no envelope at all
        good.raw(port, b"TDX2" + b"\0" * 100)  # the marker, then garbage
        good.raw(port, seal(KEY, link.nonce, link.session, 99, time.time_ns() - 5 * 10**9, frame(3)))  # sent 5 s ago
        tampered = bytearray(good.seal(port, frame(4)))
        tampered[60] ^= 1
        good.raw(port, bytes(tampered))
        good.send(port, frame(5))

    node, backend = run_node(send, n_published(2))
    assert [m["seq"] for m in published(node)] == [1, 2]
    diag, details = last_diag(node)
    assert details["rejected_by_reason"] == {"bad_mac": 3, "replay": 1, "bad_magic": 1, "stale_datagram": 1}
    assert diag["level"] in ("warn", "ok")  # warn while refusals happen; the last snapshot may follow a quiet period
    levels = [decode("Diagnostics", v)["level"] for v in node.outputs["diagnostics"]]
    assert "warn" in levels


def test_a_datagram_captured_before_a_restart_is_refused_after_it():
    """The node restarted with the same token (a new process: a new backend on
    the same port) refuses a datagram captured a moment before the restart,
    counts it, and serves a sender that pairs with it."""
    captured = {}

    def before(port):
        captured["datagram"] = Sender().send(port, frame(1, session="before", focused=False))

    node, backend = run_node(before, n_published(1))
    assert [m["focused"] for m in published(node)] == [False]

    def after(port):
        replayer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        replayer.sendto(captured["datagram"], ("127.0.0.1", port))
        replayer.close()
        Sender().send(port, frame(1, session="after"))

    node, _ = run_node(after, n_published(1), port=backend.port)
    assert [m["focused"] for m in published(node)] == [True]  # the new sender's frame only
    diag, details = last_diag(node)
    assert details["rejected_by_reason"] == {"foreign_nonce": 1} and diag["rejected"] == 1
    assert details["hellos_answered"] == 1


def test_no_takeover_while_the_controlling_sender_is_alive():
    def send(port):
        a, b = Sender(), Sender()
        a.send(port, frame(1, session="a"))
        time.sleep(0.02)
        b.send(port, frame(1, session="b", focused=False))  # refused: a is alive
        time.sleep(0.02)
        a.send(port, frame(2, session="a"))

    node, backend = run_node(send, n_published(2))
    msgs = published(node)
    assert [m["focused"] for m in msgs] == [True, True] and backend.refused == 1
    assert last_diag(node)[1]["rejected_by_reason"] == {"refused_sender": 1}


def test_takeover_after_silence_reports_the_old_client_gone_first():
    def send(port):
        a, b = Sender(), Sender()
        a.send(port, frame(1, session="a"))
        time.sleep(0.4)  # beyond the 0.2 s takeover silence
        b.send(port, frame(1, session="b"))

    node, _ = run_node(send, n_published(3), takeover_s=0.2)
    msgs = published(node)
    assert [m["left"]["connected"] for m in msgs] == [True, False, True]  # the old client is reported gone
    assert not msgs[1]["focused"] and [m["left"]["epoch"] for m in msgs] == [1, 1, 2]


def test_a_flood_of_garbage_keeps_the_node_serving():
    holder = {}

    def send(port):
        s = Sender()
        for i in range(2000):
            s.raw(port, secrets.token_bytes(i % 200))
        # a full socket buffer may have dropped some datagrams: repeat a valid frame until one is through
        deadline, seq = time.monotonic() + 20, 0
        while not holder["node"].outputs.get("controllers") and time.monotonic() < deadline:
            seq += 1
            s.send(port, frame(seq))
            time.sleep(0.02)

    backend = xr_udp.UdpFeedBackend("127.0.0.1", 0, TOKEN)
    backend.connect()
    node = UntilDone(bound_s=30)
    holder["node"] = node
    sender = threading.Thread(target=send, args=(backend.port,), daemon=True)
    sender.start()
    threading.Thread(target=lambda: (sender.join(), node.done.set()), daemon=True).start()
    xr_udp.main([], node=node, backend=backend)
    msgs = published(node)
    assert msgs and all(m["left"]["connected"] and not message_violations(m, m["stamp_ns"]) for m in msgs)
    # the loss of some garbage datagrams in the socket buffer is fine; all that arrived was counted
    counted = sum(last_diag(node)[1]["rejected_by_reason"].values())
    assert 0 < counted <= 2000
    refusals_logged = [e for e in node.logs if e["message"].startswith("rejected")]
    periods = len(node.outputs["diagnostics"])
    assert len(refusals_logged) <= 4 * periods  # per period, the first of each reason is logged, the rest counted


@pytest.mark.parametrize("link_delay_ms, tracks", [(20, True), (400, False)])
def test_a_link_delay_beyond_the_pose_rule_holds_the_arm(link_delay_ms, tracks):
    # frames sampled and stamped link_delay_ms before they reach the socket, as a slow link
    # delivers them: the node stamps them with their sample time, and the control scheme
    # judges that age, not the (prompt) arrival
    from teledora.models.config_files import load_teleop_config
    from teledora.operators.geometry import Pose
    from teledora.operators.teleop.teleop_scheme import TeleopScheme

    def send(port):
        s = Sender()
        for seq in range(1, 6):
            t = time.time_ns() - link_delay_ms * 1_000_000
            s.send(port, frame(seq, sent_ns=t))
            time.sleep(0.01)

    node, _ = run_node(send, n_published(5))
    scheme = TeleopScheme(load_teleop_config())
    grip = Pose.of([0.35, 0.18, 0.75], [0, 0, 0, 1])
    for m in published(node):
        scheme.on_controllers(m, m["stamp_ns"])
        out = scheme.step(m["stamp_ns"], {"left": grip, "right": grip})
    assert out.arm_targets["left"]["enabled"] is tracks


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

        assert cli(["xr", "send-udp", str(rec), "--port", str(port), "--speed", "10", "--token", TOKEN]) == 0

    node, _ = run_node(send, n_published(5))
    msgs = published(node)
    assert [round(m["left"]["position"][0], 6) for m in msgs] == [0.3, 0.31, 0.32, 0.33, 0.34]
    for m in msgs:  # the pose was sampled 2 ms before the send: its age on arrival is that plus the link
        age = m["stamp_ns"] - m["left"]["pose_stamp_ns"]
        assert 2_000_000 <= age < 2_000_000 + 1_000_000_000


def test_send_udp_without_the_token_is_refused(tmp_path: Path, capsys, monkeypatch):
    from teledora.cli import main as cli

    monkeypatch.delenv("XR_UDP_TOKEN", raising=False)
    rec = tmp_path / "feed.jsonl"
    rec.write_text(frame(1).decode() + "\n")
    assert cli(["xr", "send-udp", str(rec)]) == 2
    assert "token" in capsys.readouterr().err


def test_send_udp_without_a_node_to_pair_with_fails(tmp_path: Path, capsys):
    from teledora.cli import main as cli

    silent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)  # takes the hellos, answers none
    silent.bind(("127.0.0.1", 0))
    rec = tmp_path / "feed.jsonl"
    rec.write_text(frame(1).decode() + "\n")
    rc = cli(["xr", "send-udp", str(rec), "--port", str(silent.getsockname()[1]), "--token", TOKEN,
              "--pair-timeout-s", "0.3"])
    hellos = []
    silent.setblocking(False)
    while True:
        try:
            hellos.append(silent.recv(4096))
        except BlockingIOError:
            break
    silent.close()
    assert rc == 1 and "no welcome" in capsys.readouterr().err
    assert hellos and all(h[:4] == b"TDH2" for h in hellos)  # no frame went out unpaired


def test_send_udp_rejects_a_bad_recording(tmp_path: Path, capsys):
    rec = tmp_path / "bad.jsonl"
    rec.write_text(frame(1).decode() + "\n{\"version\": 1}\n")
    from teledora.cli import main as cli

    assert cli(["xr", "send-udp", str(rec), "--token", TOKEN]) == 1
    assert "bad.jsonl:2" in capsys.readouterr().err


def test_record_udp_keeps_authenticated_valid_frames_only(tmp_path: Path):
    from teledora.cli import main as cli

    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    out = tmp_path / "rec.jsonl"
    result = {}
    t = threading.Thread(target=lambda: result.update(rc=cli(["xr", "record-udp", str(out), "--port", str(port),
                                                              "--count", "2", "--seconds", "20", "--token", TOKEN])))
    t.start()
    s = Sender()
    deadline = time.monotonic() + 15
    seq = 0
    while t.is_alive() and time.monotonic() < deadline:  # the sender pairs once the recorder is listening
        seq += 1
        s.send(port, b"garbage")
        link = s.dev.link
        s.raw(port, seal(feed_key("nope"), link.nonce, link.session, 10**6 + seq, time.time_ns(), frame(1000 + seq)))
        s.send(port, frame(seq))
        t.join(0.05)
    t.join(5)
    lines = out.read_text().splitlines()
    assert result["rc"] == 0 and len(lines) == 2
    assert all(json.loads(x)["seq"] < 1000 for x in lines)


def test_buttons_carries_the_reports_that_change_a_level_and_the_disconnect():
    """``buttons``: the first report, a press, its release and the old client's
    disconnect on takeover and the new client's first (numbered on); analog motion
    alone adds nothing."""
    def send(port):
        a, b = Sender(), Sender()
        pressed = json.loads(frame(3, session="a"))
        pressed["hands"]["left"]["primary"] = True
        moved = json.loads(frame(2, session="a"))
        moved["hands"]["left"]["stick"] = [0.3, -0.2]
        for payload in [frame(1, session="a"), json.dumps(moved).encode(), json.dumps(pressed).encode(),
                        frame(4, session="a"), frame(5, session="a")]:
            a.send(port, payload)
            time.sleep(0.002)
        time.sleep(0.4)  # beyond the 0.2 s takeover silence
        b.send(port, frame(1, session="b"))

    node, _ = run_node(send, n_published(7), takeover_s=0.2)
    assert len(published(node)) == 7
    buttons = [decode("XrControllers", v) for v in node.outputs.get("buttons", [])]
    got = [(m["seq"], m["left"]["connected"], m["left"]["primary"]) for m in buttons]
    # a heartbeat (one a second without a change) may repeat a report on a slow machine
    changes = [g for i, g in enumerate(got) if i == 0 or g[1:] != got[i - 1][1:]]
    assert changes == [(1, True, False), (3, True, True), (4, True, False), (6, False, False), (7, True, False)]
    assert 2 not in [g[0] for g in got]  # the stick alone moved
