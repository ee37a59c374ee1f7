"""Property-based checks of the NatNet parsers: any datagram, and any frame of
data a bit flip, a cut or a spliced byte made from a valid one, is either
parsed or refused with the protocol's own error (never an IndexError, a
struct.error, a UnicodeDecodeError or a huge allocation from a wild count)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from teledora.operators.mocap import natnet_frame as nf
from teledora.operators.mocap import natnet_model_def as nm
from teledora.operators.mocap import natnet_protocol as nn

VERSIONS = [(3, 0, 0, 0), (3, 1, 0, 0), (4, 0, 0, 0), (4, 1, 0, 0), (4, 2, 0, 0)]
PARSERS = {
    "frame of data": lambda payload, version: nf.parse_frame_of_data(payload, version),
    "model definitions": lambda payload, version: nm.parse_model_def(payload, version),
    "server info": lambda payload, version: nn.parse_server_info(payload),
    "connect": lambda payload, version: nn.parse_connect(payload),
    "echo request": lambda payload, version: nn.parse_echo_request(payload),
    "echo response": lambda payload, version: nn.parse_echo_response(payload),
}


def _parses_or_refuses(parser: str, payload: bytes, version) -> None:
    try:
        PARSERS[parser](payload, version)
    except nn.NatNetProtocolError:
        pass


@given(st.binary(max_size=2048), st.sampled_from(sorted(PARSERS)), st.sampled_from(VERSIONS))
def test_any_payload_is_parsed_or_refused_by_every_parser(payload, parser, version):
    _parses_or_refuses(parser, payload, version)


@given(st.binary(max_size=64))
def test_any_datagram_splits_or_is_refused(data):
    try:
        pkt = nn.split_packet(data)
    except nn.NatNetProtocolError:
        return
    assert len(pkt.payload) <= len(data) - 4


def _valid_frame(version, bodies: int, markers: int) -> bytes:
    frame = nf.FrameOfData(
        frame_number=42,
        rigid_bodies=tuple(nf.RigidBodySample(i + 1, (0.1 * i, 0.2, 0.3), (0.0, 0.0, 0.0, 1.0), 0.0002, i % 2 == 0)
                           for i in range(bodies)),
        timestamp_s=1.5, stamp_camera_mid_exposure=10, stamp_data_received=20, stamp_transmit=30,
        timecode=0, timecode_sub=0, precision_timestamp_s=0, precision_timestamp_frac=0,
        is_recording=False, tracked_models_changed=False,
        labeled_markers=tuple(nf.LabeledMarker(100 + i, (1.0, 2.0, 3.0), 0.01, 0, 0.0) for i in range(markers)),
    )
    return nn.split_packet(nf.build_frame_of_data(frame, version, {"robot": [(1.0, 2.0, 3.0)]})).payload


@given(st.sampled_from(VERSIONS), st.integers(0, 4), st.integers(0, 3), st.data())
def test_a_damaged_frame_is_parsed_or_refused(version, bodies, markers, data):
    payload = bytearray(_valid_frame(version, bodies, markers))
    damage = data.draw(st.sampled_from(["flip", "cut", "insert", "count"]), label="damage")
    k = data.draw(st.integers(0, len(payload) - 1), label="offset")
    if damage == "flip":
        payload[k] ^= data.draw(st.integers(1, 255), label="xor")
    elif damage == "cut":
        del payload[k:]
    elif damage == "insert":
        payload[k:k] = data.draw(st.binary(min_size=1, max_size=8), label="inserted")
    else:  # a 32-bit field at k set to a wild value (counts and sizes are i32)
        payload[k:k + 4] = data.draw(st.sampled_from([b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\xff\xff\xff\xff"]),
                                     label="wild i32")
    _parses_or_refuses("frame of data", bytes(payload), version)


@given(st.sampled_from(VERSIONS), st.integers(0, 4), st.integers(0, 3))
def test_an_undamaged_frame_parses_to_what_was_built(version, bodies, markers):
    got = nf.parse_frame_of_data(_valid_frame(version, bodies, markers), version)
    assert got.frame_number == 42 and [b.id for b in got.rigid_bodies] == list(range(1, bodies + 1))
    assert [m.id for m in got.labeled_markers] == [100 + i for i in range(markers)]


NAME = "robot"  # a placeholder of the same length is swapped for arbitrary bytes


@given(st.sampled_from(VERSIONS), st.binary(min_size=len(NAME), max_size=len(NAME)).filter(lambda b: b"\0" not in b))
def test_names_of_any_bytes_are_read_or_refused(version, raw):
    """Names are C strings meant to be UTF-8; a sender's bytes that are not are
    refused with the protocol's error, in a frame's marker set and in a rigid
    body's description alike."""
    frame = _valid_frame(version, 1, 0)
    model = nn.split_packet(nm.build_model_def([nm.RigidBodyDescription(NAME, 1)], version)).payload
    for payload, parser in ((frame, "frame of data"), (model, "model definitions")):
        assert payload.count(NAME.encode()) == 1
        damaged = payload.replace(NAME.encode(), raw)
        try:
            PARSERS[parser](damaged, version)
        except nn.NatNetProtocolError as exc:
            assert "UTF-8" in str(exc)
            continue
        raw.decode("utf-8")  # read: then it was valid UTF-8
