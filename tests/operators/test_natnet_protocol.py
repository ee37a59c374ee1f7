"""NatNet packet parse/build: round trips, byte layout, and rejection of bad packets."""

from __future__ import annotations

import struct

import pytest

from teledora.operators import natnet_protocol as nn

V41 = (4, 1, 0, 0)
V40 = (4, 0, 0, 0)
V30 = (3, 0, 0, 0)


def _frame(**kw) -> nn.FrameOfData:
    base = dict(
        frame_number=1234,
        rigid_bodies=(
            nn.RigidBodySample(7, (1.0, 0.5, -2.0), (0.0, 0.0, 0.0, 1.0), 0.0002, True),
            nn.RigidBodySample(9, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.0, False),
        ),
        timestamp_s=12.5,
        stamp_camera_mid_exposure=1_000_000,
        stamp_data_received=1_004_000,
        stamp_transmit=1_005_000,
        timecode=3,
        timecode_sub=4,
        precision_timestamp_s=1700000000,
        precision_timestamp_frac=123,
        is_recording=True,
        tracked_models_changed=False,
        labeled_markers=(nn.LabeledMarker(65537, (1.0, 2.0, 3.0), 0.014, 2, 0.0001),),
    )
    base.update(kw)
    return nn.FrameOfData(**base)


@pytest.mark.parametrize("version", [V30, V40, V41])
def test_frame_round_trip(version):
    frame = _frame()
    pkt = nn.split_packet(nn.build_frame_of_data(frame, version, {"robot": [(1, 2, 3), (4, 5, 6)]}))
    assert pkt.message_id == nn.MessageId.FRAME_OF_DATA
    got = nn.parse_frame_of_data(pkt.payload, version)
    assert got.frame_number == 1234
    assert [b.id for b in got.rigid_bodies] == [7, 9]
    assert got.rigid_bodies[0].position == pytest.approx((1.0, 0.5, -2.0))
    assert got.rigid_bodies[0].mean_error_m == pytest.approx(0.0002)
    assert got.rigid_bodies[0].tracking_valid is True
    assert got.rigid_bodies[1].tracking_valid is False
    assert got.stamp_camera_mid_exposure == 1_000_000
    assert got.stamp_transmit == 1_005_000
    assert got.timestamp_s == 12.5
    assert got.is_recording is True
    assert got.labeled_markers[0].id == 65537
    if version >= (4, 1):
        assert got.precision_timestamp_s == 1700000000
    else:
        assert got.precision_timestamp_s == 0


def test_rigid_body_bytes_follow_documented_layout():
    """The 4.1 rigid-body section: count, byte size, then id/pos/quat/err/params."""
    frame = _frame(rigid_bodies=(nn.RigidBodySample(7, (1.0, 2.0, 3.0), (0.1, 0.2, 0.3, 0.9), 0.5, True),),
                   labeled_markers=())
    payload = nn.split_packet(nn.build_frame_of_data(frame, V41)).payload
    # frame number, marker sets (count 0, size 0), legacy (0, 0), then rigid bodies
    assert struct.unpack_from("<i", payload, 0)[0] == 1234
    off = 4 + 8 + 8
    count, size = struct.unpack_from("<ii", payload, off)
    assert (count, size) == (1, 38)
    rid, x, y, z, qx, qy, qz, qw, err, params = struct.unpack_from("<i3f4ffh", payload, off + 8)
    assert (rid, params) == (7, 1)
    assert (qx, qw) == pytest.approx((0.1, 0.9))


def test_header_declares_payload_size():
    data = nn.build_packet(nn.MessageId.KEEP_ALIVE, b"abc")
    assert struct.unpack("<HH", data[:4]) == (10, 3)


@pytest.mark.parametrize("cut", [5, 7, 10, 30, 60])
def test_truncated_frame_rejected(cut):
    payload = nn.split_packet(nn.build_frame_of_data(_frame(), V41)).payload
    with pytest.raises(nn.NatNetTruncatedError):
        nn.parse_frame_of_data(payload[: len(payload) - cut], V41)


def test_end_of_data_tag_is_optional():
    payload = nn.split_packet(nn.build_frame_of_data(_frame(), V41)).payload
    assert nn.parse_frame_of_data(payload[:-4], V41).frame_number == 1234


def test_truncated_header_and_size_mismatch_rejected():
    with pytest.raises(nn.NatNetTruncatedError):
        nn.split_packet(b"\x07\x00")
    data = nn.build_frame_of_data(_frame(), V41)
    with pytest.raises(nn.NatNetTruncatedError):
        nn.split_packet(data[:-5])


def test_corrupted_count_rejected_without_huge_allocation():
    payload = bytearray(nn.split_packet(nn.build_frame_of_data(_frame(), V41)).payload)
    struct.pack_into("<i", payload, 20, 50_000_000)  # rigid body count
    with pytest.raises(nn.NatNetTruncatedError, match="rigid body count"):
        nn.parse_frame_of_data(bytes(payload), V41)


def test_section_size_disagreement_rejected():
    payload = bytearray(nn.split_packet(nn.build_frame_of_data(_frame(labeled_markers=()), V41)).payload)
    struct.pack_into("<i", payload, 24, 38)  # rigid body section claims 38 bytes for 2 bodies
    with pytest.raises(nn.NatNetProtocolError, match="rigid bodies declared 38"):
        nn.parse_frame_of_data(bytes(payload), V41)


def test_parsing_with_wrong_version_layout_fails_loudly():
    payload = nn.split_packet(nn.build_frame_of_data(_frame(), V41)).payload
    with pytest.raises(nn.NatNetProtocolError):
        nn.parse_frame_of_data(payload, V30)


@pytest.mark.parametrize("version", [(2, 9, 0, 0), (5, 0, 0, 0)])
def test_unsupported_versions(version):
    with pytest.raises(nn.NatNetVersionError):
        nn.parse_frame_of_data(b"", version)


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


@pytest.mark.parametrize("version", [V40, V41])
def test_model_def_round_trip(version):
    bodies = [nn.RigidBodyDescription("alohamini2", 3, -1, (0.0, 0.1, 0.0)), nn.RigidBodyDescription("cart", 4)]
    got = nn.parse_model_def(nn.split_packet(nn.build_model_def(bodies, version)).payload, version)
    assert [(b.name, b.id) for b in got] == [("alohamini2", 3), ("cart", 4)]
    assert got[0].pivot_offset == pytest.approx((0.0, 0.1, 0.0))


def test_model_def_skips_other_descriptions_in_41():
    body = nn.split_packet(nn.build_model_def([nn.RigidBodyDescription("rb", 5)], V41)).payload
    other = struct.pack("<ii", 0, 8) + b"set\0" + struct.pack("<i", 0)  # marker set "set", 0 markers
    payload = struct.pack("<i", 2) + other + body[4:]
    got = nn.parse_model_def(payload, V41)
    assert [(b.name, b.id) for b in got] == [("rb", 5)]
