"""What every XR feed device delivers: raw frames from the headset side.

A feed device (UDP datagrams from a bridge, WebSocket messages from the
headset page) is read as a list of :class:`ReceivedFrame` and written display
messages for the operator (dicts, sent as JSON where the feed has a way back).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

from teledora.devices.device import Device


@dataclass(frozen=True)
class ReceivedFrame:
    """One frame as a feed device received it."""

    data: bytes
    peer: str
    client: int  # changes when a different client takes control
    recv_ns: int


class FeedDevice(Device):
    """An XR feed: ``read`` waits up to ``timeout_s`` for frames, ``write``
    sends a display message to the controlling client (if the feed can)."""

    @abstractmethod
    def read(self, timeout_s: float = 0.0) -> list[ReceivedFrame]: ...

    @abstractmethod
    def write(self, message: dict[str, Any]) -> None: ...
