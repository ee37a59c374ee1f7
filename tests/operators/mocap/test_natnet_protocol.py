"""NatNet packets: header, handshake and echo (MODEL_DEF: test_natnet_model_def.py)."""

from __future__ import annotations

import struct

import pytest

from teledora.operators.mocap import natnet_frame as nf
from teledora.operators.mocap import natnet_protocol as nn
V41 = (4, 1, 0, 0)


def test_header_declares_payload_size():
    data = nn.build_packet(nn.MessageId.KEEP_ALIVE, b"abc")
    assert struct.unpack("<HH", data[:4]) == (10, 3)


def test_truncated_header_and_size_mismatch_rejected():
    with pytest.raises(nn.NatNetTruncatedError):
        nn.split_packet(b"\x07\x00")
    data = nf.build_frame_of_data(nf.FrameOfData(5, ()), V41)
    with pytest.raises(nn.NatNetTruncatedError):
        nn.split_packet(data[:-5])


def test_server_info_round_trip_and_layout():
    info = nn.ServerInfo("Motive", (3, 1, 0, 0), V41, 10_000_000, 1511, False, "239.255.42.99")
    data = nn.build_server_info(info)
    assert len(data) == 4 + 256 + 8 + 8 + 2 + 1 + 4
    assert nn.parse_server_info(nn.split_packet(data).payload) == info


def test_server_info_zero_clock_rejected():
    info = nn.ServerInfo("Motive", (3, 1, 0, 0), V41, 0, 1511, False, "0.0.0.0")
    with pytest.raises(nn.NatNetProtocolError, match="frequency"):
        nn.parse_server_info(nn.split_packet(nn.build_server_info(info)).payload)


def test_connect_and_echo_round_trip():
    pkt = nn.split_packet(nn.build_connect("teledora", V41))
    assert pkt.message_id == nn.MessageId.CONNECT
    assert nn.parse_connect(pkt.payload) == ("teledora", V41)
    assert nn.parse_connect(b"Ping\0") == ("Ping", (0, 0, 0, 0))
    req = nn.split_packet(nn.build_echo_request(2**63 + 5))
    assert nn.parse_echo_request(req.payload) == 2**63 + 5
    resp = nn.split_packet(nn.build_echo_response(11, 22))
    assert resp.message_id == nn.MessageId.ECHO_RESPONSE
    assert nn.parse_echo_response(resp.payload) == (11, 22)
    with pytest.raises(nn.NatNetTruncatedError):
        nn.parse_echo_response(resp.payload[:12])
