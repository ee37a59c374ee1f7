"""The NatNet client's sockets on 127.0.0.1, and its settings."""

from __future__ import annotations

import socket
import time
from dataclasses import replace

import pytest
from teledora.models.config_files import load_mocap_config
from teledora.operators.mocap import natnet_protocol as nn
from teledora.operators.mocap.mocap_config import MocapConfig

from teledora import models
from teledora.devices.mocap.natnet_client import NatNetClient


def test_unknown_settings_are_refused() -> None:
    raw = models.load_yaml("alohamini2/mocap.yaml")
    with pytest.raises(ValueError, match=r"natnet: unknown keys \['port'\]"):
        MocapConfig.from_mapping({**raw, "natnet": {**raw["natnet"], "port": 1}})


def test_commands_reach_motive_and_replies_come_back_stamped() -> None:
    motive = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    motive.bind(("127.0.0.1", 0))
    motive.settimeout(2.0)
    stamps = iter(range(100, 200))
    config = replace(load_mocap_config().natnet, server_address="127.0.0.1", command_port=motive.getsockname()[1],
                     local_address="127.0.0.1")
    client = NatNetClient(config, clock=lambda: next(stamps))
    try:
        client.connect()
        client.write(nn.build_packet(nn.MessageId.REQUEST_MODEL_DEF))
        request, command_addr = motive.recvfrom(2048)
        assert nn.split_packet(request).message_id == nn.MessageId.REQUEST_MODEL_DEF
        client.keep_alive()
        alive, data_addr = motive.recvfrom(2048)
        assert nn.split_packet(alive).message_id == nn.MessageId.KEEP_ALIVE
        assert data_addr != command_addr  # keep-alives come from the data socket
        motive.sendto(b"reply", command_addr)
        motive.sendto(b"frame", data_addr)
        received: list = []
        deadline = time.monotonic() + 2.0
        while len(received) < 2 and time.monotonic() < deadline:
            received += client.read(0.05)
        assert sorted(data for _, data in received) == [b"frame", b"reply"]
        assert all(100 <= stamp < 200 for stamp, _ in received)
    finally:
        client.close()
        motive.close()
    assert client.command is None and client.data is None
