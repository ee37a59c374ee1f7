"""The UDP feed device and its sender over real datagrams on 127.0.0.1: pairing,
and replay protection that holds across a restart of the receiver."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from teledora.devices.xr.udp_feed import PairingFailed, UdpFeedBackend, UdpFeedSender

TOKEN = "fixed pairing token"


class Receiving:
    """A feed device read on its own thread, as the node's loop reads it."""

    def __init__(self, port: int = 0, token: str = TOKEN) -> None:
        self.backend = UdpFeedBackend("127.0.0.1", port, token)
        self.backend.connect()
        self.port = self.backend.port
        self.frames: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.frames += [rx.data for rx in self.backend.read(0.01)]

    def wait(self, what, bound_s: float = 10.0) -> None:
        deadline = time.monotonic() + bound_s
        while not what() and time.monotonic() < deadline:
            time.sleep(0.002)
        assert what()

    def refused(self, reason: str) -> int:
        return self.backend.rejections().get(reason, 0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.backend.close()


def sender(port: int) -> UdpFeedSender:
    s = UdpFeedSender("127.0.0.1", port, TOKEN)
    s.connect()
    return s


def test_a_datagram_captured_before_a_restart_is_refused_after_it():
    first = Receiving()
    port = first.port
    live = sender(port)
    captured = live.send(b'{"captured": 1}')
    first.wait(lambda: first.frames == [b'{"captured": 1}'])
    first.stop()

    second = Receiving(port)  # restarted: a new instance, the same port and token
    attacker = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    attacker.sendto(captured, ("127.0.0.1", port))  # well within the replay window
    second.wait(lambda: second.refused("foreign_nonce") == 1)
    assert second.frames == [] and second.backend.rejections() == {"foreign_nonce": 1}

    fresh = sender(port)  # a sender pairing with the new run gets through
    fresh.send(b'{"fresh": 1}')
    second.wait(lambda: second.frames == [b'{"fresh": 1}'])
    assert second.backend.rejections() == {"foreign_nonce": 1}
    for s in (live, fresh):
        s.close()
    attacker.close()
    second.stop()


def test_a_live_sender_pairs_again_after_the_receiver_restarts():
    first = Receiving()
    port = first.port
    live = sender(port)
    live.send(b'{"n": 1}')
    first.wait(lambda: first.frames == [b'{"n": 1}'])
    first.stop()

    second = Receiving(port)
    live.send(b'{"n": 2}')  # still sealed for the old run: refused, answered with a rehello
    second.wait(lambda: second.refused("foreign_nonce") == 1)
    live.send(b'{"n": 3}')  # takes the rehello, pairs with the new run, then goes through
    second.wait(lambda: second.frames == [b'{"n": 3}'])
    assert live.pairings == 2 and second.backend.rejections() == {"foreign_nonce": 1}
    assert second.backend.hellos_answered == 1
    live.close()
    second.stop()


def test_pairing_with_the_wrong_token_fails_and_is_counted():
    receiving = Receiving()
    s = UdpFeedSender("127.0.0.1", receiving.port, "another token", pair_timeout_s=0.3, resend_s=0.1)
    s.connect()
    with pytest.raises(PairingFailed):
        s.send(b"{}")
    receiving.wait(lambda: receiving.refused("bad_mac") >= 1)
    assert receiving.frames == [] and receiving.backend.hellos_answered == 0
    s.close()
    receiving.stop()
