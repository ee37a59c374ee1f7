"""Episode requests over UDP on the loopback interface.

``teledora episode start --task ... / keep / discard`` sends one JSON datagram
(``{"event": "start", "task": "..."}``) to the episodes node, which answers
with one JSON datagram (``{"ok": true, "open": true, "task": "..."}`` or
``{"ok": false, "error": "..."}``). Loopback only: requests come from the
machine the dataflow runs on.
"""

from __future__ import annotations

import json
import socket
from typing import Any, Callable

MAX_DATAGRAM = 4096
DEFAULT_PORT = 47811


class EpisodeRequestSocket:
    """The node's end: a non-blocking UDP socket bound to 127.0.0.1:``port``."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setblocking(False)
        self.sock.bind(("127.0.0.1", port))

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def serve(self, handle: Callable[[dict[str, Any]], dict[str, Any]]) -> int:
        """Answers every waiting request with ``handle``'s reply; returns how many."""
        n = 0
        while True:
            try:
                data, peer = self.sock.recvfrom(MAX_DATAGRAM)
            except BlockingIOError:
                return n
            try:
                request = json.loads(data.decode("utf-8"))
                if not isinstance(request, dict):
                    raise ValueError("a request is a JSON object")
                reply = handle(request)
            except (ValueError, UnicodeDecodeError) as exc:
                reply = {"ok": False, "error": str(exc)}
            self.sock.sendto(json.dumps(reply).encode(), peer)
            n += 1

    def close(self) -> None:
        self.sock.close()


def send_request(request: dict[str, Any], port: int, timeout_s: float) -> dict[str, Any]:
    """The CLI's end: sends one request, waits for the answer (TimeoutError if none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout_s)
        sock.sendto(json.dumps(request).encode(), ("127.0.0.1", port))
        try:
            data, _ = sock.recvfrom(MAX_DATAGRAM)
        except (socket.timeout, ConnectionRefusedError):
            raise TimeoutError(f"no episodes node answered on 127.0.0.1:{port} (is a dataflow running?)") from None
    return json.loads(data.decode("utf-8"))
