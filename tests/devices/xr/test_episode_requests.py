"""Episode requests over real UDP on 127.0.0.1, and the `teledora episode` command."""

from __future__ import annotations

import threading
import time

import pytest

from teledora.cli import build_parser
from teledora.devices.xr.episode_requests import EpisodeRequestSocket, send_request
from teledora.operators.teleop.episode_marker import EpisodeMarker


class Served:
    """The node's side in a thread: a marker answering requests until stopped."""

    def __init__(self) -> None:
        self.sock = EpisodeRequestSocket(0)
        self.marker = EpisodeMarker("default task", 5.0)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _handle(self, req):
        try:
            done = self.marker.request(str(req.get("event")), time.time_ns(), req.get("task"))
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": done, "open": self.marker.open, "task": self.marker.task,
                **({} if done else {"error": self.marker.refused[-1]})}

    def _loop(self):
        while not self._stop.is_set():
            self.sock.serve(self._handle)
            time.sleep(0.005)

    def close(self):
        self._stop.set()
        self.thread.join()
        self.sock.close()


@pytest.fixture
def served():
    s = Served()
    yield s
    s.close()


def test_request_round_trip_and_bad_datagrams(served):
    assert send_request({"event": "start", "task": "stack"}, served.sock.port, 2.0) == {"ok": True, "open": True, "task": "stack"}
    assert send_request({"event": "keep"}, served.sock.port, 2.0)["open"] is False
    reply = send_request({"event": "bogus"}, served.sock.port, 2.0)
    assert reply["ok"] is False and "bogus" in reply["error"]
    assert [m["event"] for m in served.marker.take_marks()] == ["start", "keep"]


def test_not_json_is_answered(served):
    import json
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2.0)
        s.sendto(b"\xff not json", ("127.0.0.1", served.sock.port))
        reply = json.loads(s.recvfrom(4096)[0])
    assert reply["ok"] is False


def test_cli(served, capsys):
    port = str(served.sock.port)
    args = build_parser().parse_args(["episode", "start", "--task", "pour", "--port", port])
    assert args.func(args) == 0 and "episode open, task 'pour'" in capsys.readouterr().out
    args = build_parser().parse_args(["episode", "discard", "--port", port])
    assert args.func(args) == 0
    args = build_parser().parse_args(["episode", "keep", "--port", port])
    assert args.func(args) == 1 and "no episode open" in capsys.readouterr().err


def test_cli_without_a_dataflow(capsys):
    probe = EpisodeRequestSocket(0)
    port = probe.port
    probe.close()  # nothing listens there now
    args = build_parser().parse_args(["episode", "keep", "--port", str(port), "--timeout-s", "0.3"])
    assert args.func(args) == 1 and "no episodes node answered" in capsys.readouterr().err
