"""The MAVLink 2 link to the autopilot (serial or UDP, through pymavlink): a device.

``read`` returns every message already received without blocking, ``write``
sends one message by name with pymavlink's field order; any I/O failure is a
:class:`LinkError`, which the bridge answers by reopening the link.
"""

from __future__ import annotations

import os
from typing import Any

from teledora.operators.errors import DeviceError
from teledora.devices.device import Device


class LinkError(DeviceError, OSError):
    """The MAVLink connection failed (open, read or write)."""


class ArduPilotLink(Device):
    """MAVLink 2 connection (serial or UDP) through pymavlink: connect / read / write / close.

    Args:
        connection: pymavlink connection string (``/dev/ttyACM0``, ``udpout:HOST:PORT``,
            ``udpin:0.0.0.0:14550``).
        baud: Serial baud rate.
        source_system: Our MAVLink system id.
        source_component: Our MAVLink component id.
    """

    def __init__(self, connection: str, baud: int = 115200, source_system: int = 1, source_component: int = 191):
        self.connection = connection
        self.baud = baud
        self.source_system = source_system
        self.source_component = source_component
        self._conn: Any = None
        self.bad_data = 0

    def connect(self) -> None:
        os.environ["MAVLINK20"] = "1"  # OPTICAL_FLOW's flow_rate fields are MAVLink 2 extensions
        from pymavlink import mavutil

        mavutil.set_dialect("ardupilotmega")
        try:
            self._conn = mavutil.mavlink_connection(
                self.connection, baud=self.baud, source_system=self.source_system,
                source_component=self.source_component, autoreconnect=False)
        except Exception as exc:  # serial.SerialException, OSError, socket.gaierror
            raise LinkError(f"cannot open {self.connection}: {exc}") from exc

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def local_address(self) -> tuple[str, int] | None:
        """The bound UDP address (tests), or None for serial."""
        sock = getattr(self._conn, "port", None)
        try:
            return sock.getsockname() if sock is not None else None
        except (OSError, AttributeError):
            return None

    def read(self, limit: int = 200) -> list[Any]:
        """Every message already received (up to ``limit``), without blocking."""
        if self._conn is None:
            raise LinkError("not connected")
        out = []
        try:
            for _ in range(limit):
                msg = self._conn.recv_match(blocking=False)
                if msg is None:
                    break
                if msg.get_type() == "BAD_DATA":
                    self.bad_data += 1
                    continue
                out.append(msg)
        except Exception as exc:  # serial unplugged, socket closed, malformed input
            if isinstance(exc, (OSError, EOFError)) or type(exc).__name__ == "SerialException":
                raise LinkError(f"read failed: {exc}") from exc
            self.bad_data += 1
        return out

    def write(self, name: str, *args: Any) -> None:
        """Sends message ``name`` (e.g. ``"optical_flow"``) with pymavlink's field order."""
        if self._conn is None:
            raise LinkError("not connected")
        try:
            getattr(self._conn.mav, f"{name}_send")(*args)
        except (OSError, ValueError) as exc:
            raise LinkError(f"write {name} failed: {exc}") from exc

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:
                pass
        self._conn = None
