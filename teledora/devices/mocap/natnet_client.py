"""The NatNet client's sockets to OptiTrack Motive: the mocap node's hardware device.

A command socket (CONNECT, echo requests, MODEL_DEF requests to Motive's
command port) and a data socket (frames, unicast after keep-alives or from the
multicast group). The packets themselves are built and parsed in
:mod:`teledora.operators.mocap.natnet_protocol`; the node drives the handshake.
"""

from __future__ import annotations

import select
import socket
import struct
import time
from typing import Callable

from teledora.devices.device import Device
from teledora.operators.mocap import natnet_protocol as nn
from teledora.operators.mocap.mocap_config import NatNetConfig


class NatNetClient(Device):
    """UDP sockets to Motive: a command socket and a data socket.

    ``connect`` opens them, ``read`` returns datagrams with their host arrival
    time, ``write`` sends a command, ``keep_alive`` tells Motive where to send
    unicast frames, ``close`` releases everything.

    Args:
        config: Connection settings.
        clock: Host clock (ns) that stamps each datagram's arrival.
    """

    def __init__(self, config: NatNetConfig, clock: Callable[[], int] = time.time_ns) -> None:
        self.config = config
        self.clock = clock
        self.command: socket.socket | None = None
        self.data: socket.socket | None = None
        self.server = (config.server_address, config.command_port)

    def connect(self) -> None:
        """Opens the sockets (nothing is sent: the node drives the handshake)."""
        c = self.config
        self.command = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.command.bind((c.local_address, 0))
        self.data = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.data.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        if c.multicast:
            self.data.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.data.bind(("", c.data_port))
            local = socket.inet_aton("0.0.0.0" if c.local_address == "0.0.0.0" else c.local_address)
            mreq = struct.pack("4s4s", socket.inet_aton(c.multicast_group), local)
            self.data.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
        else:
            self.data.bind((c.local_address, 0))
        for s in (self.command, self.data):
            s.setblocking(False)

    def write(self, data: bytes) -> None:
        """Sends a command datagram to Motive's command port."""
        assert self.command is not None, "connect() first"
        try:
            self.command.sendto(data, self.server)
        except OSError:
            pass  # Motive unreachable: the retry timers try again

    def keep_alive(self) -> None:
        """Tells Motive where to send unicast frames (from the data socket)."""
        assert self.data is not None, "connect() first"
        try:
            self.data.sendto(nn.build_packet(nn.MessageId.KEEP_ALIVE), self.server)
        except OSError:
            pass

    def read(self, timeout_s: float = 0.0) -> list[tuple[int, bytes]]:
        """Waits up to ``timeout_s`` for datagrams; returns all queued ones with host arrival times."""
        assert self.command is not None and self.data is not None, "connect() first"
        socks = [self.command, self.data]
        ready, _, _ = select.select(socks, [], [], timeout_s)
        out: list[tuple[int, bytes]] = []
        for s in ready:
            while True:
                try:
                    data = s.recv(65535)
                except (BlockingIOError, InterruptedError):
                    break
                except OSError:
                    break  # e.g. ICMP port unreachable reported on the socket
                out.append((self.clock(), data))
        out.sort(key=lambda item: item[0])
        return out

    def close(self) -> None:
        for s in (self.command, self.data):
            if s is not None:
                s.close()
        self.command = self.data = None
