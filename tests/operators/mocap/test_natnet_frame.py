"""NatNet FRAME_OF_DATA parse/build: round trips, byte layout, rejection of bad frames."""

from __future__ import annotations

import struct

import pytest

from teledora.operators.mocap import natnet_frame as nf
from teledora.operators.mocap import natnet_protocol as nn
V41 = (4, 1, 0, 0)
V40 = (4, 0, 0, 0)
V30 = (3, 0, 0, 0)


def _frame(**kw) -> nf.FrameOfData:
    base = dict(
        frame_number=1234,
        rigid_bodies=(
            nf.RigidBodySample(7, (1.0, 0.5, -2.0), (0.0, 0.0, 0.0, 1.0), 0.0002, True),
            nf.RigidBodySample(9, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), 0.0, False),
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
        labeled_markers=(nf.LabeledMarker(65537, (1.0, 2.0, 3.0), 0.014, 2, 0.0001),),
    )
    base.update(kw)
    return nf.FrameOfData(**base)


@pytest.mark.parametrize("version", [V30, V40, V41])
def test_frame_round_trip(version):
    frame = _frame()
    pkt = nn.split_packet(nf.build_frame_of_data(frame, version, {"robot": [(1, 2, 3), (4, 5, 6)]}))
    assert pkt.message_id == nn.MessageId.FRAME_OF_DATA
    got = nf.parse_frame_of_data(pkt.payload, version)
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
    frame = _frame(rigid_bodies=(nf.RigidBodySample(7, (1.0, 2.0, 3.0), (0.1, 0.2, 0.3, 0.9), 0.5, True),),
                   labeled_markers=())
    payload = nn.split_packet(nf.build_frame_of_data(frame, V41)).payload
    # frame number, marker sets (count 0, size 0), legacy (0, 0), then rigid bodies
    assert struct.unpack_from("<i", payload, 0)[0] == 1234
    off = 4 + 8 + 8
    count, size = struct.unpack_from("<ii", payload, off)
    assert (count, size) == (1, 38)
    rid, x, y, z, qx, qy, qz, qw, err, params = struct.unpack_from("<i3f4ffh", payload, off + 8)
    assert (rid, params) == (7, 1)
    assert (qx, qw) == pytest.approx((0.1, 0.9))


@pytest.mark.parametrize("cut", [5, 7, 10, 30, 60])
def test_truncated_frame_rejected(cut):
    payload = nn.split_packet(nf.build_frame_of_data(_frame(), V41)).payload
    with pytest.raises(nn.NatNetTruncatedError):
        nf.parse_frame_of_data(payload[: len(payload) - cut], V41)


def test_end_of_data_tag_is_optional():
    payload = nn.split_packet(nf.build_frame_of_data(_frame(), V41)).payload
    assert nf.parse_frame_of_data(payload[:-4], V41).frame_number == 1234


def test_corrupted_count_rejected_without_huge_allocation():
    payload = bytearray(nn.split_packet(nf.build_frame_of_data(_frame(), V41)).payload)
    struct.pack_into("<i", payload, 20, 50_000_000)  # rigid body count
    with pytest.raises(nn.NatNetTruncatedError, match="rigid body count"):
        nf.parse_frame_of_data(bytes(payload), V41)


def test_section_size_disagreement_rejected():
    payload = bytearray(nn.split_packet(nf.build_frame_of_data(_frame(labeled_markers=()), V41)).payload)
    struct.pack_into("<i", payload, 24, 38)  # rigid body section claims 38 bytes for 2 bodies
    with pytest.raises(nn.NatNetProtocolError, match="rigid bodies declared 38"):
        nf.parse_frame_of_data(bytes(payload), V41)


def test_parsing_with_wrong_version_layout_fails_loudly():
    payload = nn.split_packet(nf.build_frame_of_data(_frame(), V41)).payload
    with pytest.raises(nn.NatNetProtocolError):
        nf.parse_frame_of_data(payload, V30)


@pytest.mark.parametrize("version", [(2, 9, 0, 0), (5, 0, 0, 0)])
def test_unsupported_versions(version):
    with pytest.raises(nn.NatNetVersionError):
        nf.parse_frame_of_data(b"", version)
