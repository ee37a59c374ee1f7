"""Property-based checks of the Feetech status/request frame decoder: any
bytes from the bus are either a frame, a request for more bytes, or one of
the protocol's own errors; frames survive a round trip and line noise."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teledora.operators.drive import feetech_protocol as fp

ids = st.integers(0, fp.BROADCAST_ID)
codes = st.integers(0, 255)
params = st.binary(max_size=250)
noise_without_header = st.binary(max_size=64).map(lambda b: b.replace(b"\xff", b"\x00"))


@given(st.binary(max_size=600))
def test_any_bytes_give_a_frame_a_wait_or_a_protocol_error(data):
    try:
        pkt, used = fp.decode_packet(data)
    except fp.FeetechProtocolError:
        return  # the caller drops bytes and resyncs (a checksum error is a subclass)
    assert 0 <= used <= len(data)
    if pkt is None:
        # what is kept can only be a frame still arriving: it starts at a header byte
        assert data[used:] == b"" or data[used] == 0xFF
    else:
        assert used > 0
        assert 0 <= pkt.servo_id <= 0xFE and len(pkt.params) <= 253
        assert fp.encode_packet(pkt.servo_id, pkt.code, pkt.params) == data[used - 6 - len(pkt.params):used]


@given(ids, codes, params)
def test_every_frame_round_trips(servo_id, code, payload):
    frame = fp.encode_packet(servo_id, code, payload)
    assert fp.decode_packet(frame) == (fp.Packet(servo_id, code, payload), len(frame))


@given(ids.filter(lambda i: i != 0xFF), codes, params, noise_without_header, st.integers(1, 40))
def test_a_frame_after_line_noise_arrives_whole_in_any_chunks(servo_id, code, payload, noise, chunk):
    """A frame behind bytes that hold no header is found however the bytes
    trickle in: until it is complete only a wait is asked for."""
    frame = fp.encode_packet(servo_id, code, payload)
    stream = noise + frame
    buffer = b""
    found = []
    for k in range(0, len(stream), chunk):
        buffer += stream[k:k + chunk]
        pkt, used = fp.decode_packet(buffer)
        buffer = buffer[used:]
        if pkt is not None:
            found.append(pkt)
    assert found == [fp.Packet(servo_id, code, payload)] and buffer == b""


@given(ids.filter(lambda i: i != 0xFF), codes, params, st.data())
def test_a_corrupted_byte_is_never_taken_for_the_frame(servo_id, code, payload, data):
    frame = bytearray(fp.encode_packet(servo_id, code, payload))
    k = data.draw(st.integers(2, len(frame) - 1), label="corrupted offset (past the header)")
    frame[k] ^= data.draw(st.integers(1, 255), label="xor")
    if k >= 4:  # instruction, parameters or checksum: the one-byte checksum catches any single change
        with pytest.raises(fp.FeetechChecksumError):
            fp.decode_packet(bytes(frame))
        return
    try:  # id or length: another frame boundary, an incomplete frame or an error
        pkt, _ = fp.decode_packet(bytes(frame))
    except fp.FeetechProtocolError:
        return
    assert pkt is None or pkt != fp.Packet(servo_id, code, payload)


@given(ids.filter(lambda i: i != 0xFF), codes, params, st.integers(1, 6))
def test_repeated_header_bytes_before_a_frame_are_stepped_over(servo_id, code, payload, extra):
    """An id of 0xFF does not exist on the bus, so a run of 0xFF bytes (a line
    idling high, a header repeated) ends where the frame's own header does."""
    frame = fp.encode_packet(servo_id, code, payload)
    assert fp.decode_packet(b"\xff" * extra + frame) == (fp.Packet(servo_id, code, payload), extra + len(frame))


@given(noise_without_header, st.integers(0, 6), ids.filter(lambda i: i != 0xFF), codes, params)
def test_the_header_index_points_at_the_id_and_length_of_the_frame_decoded(noise, extra, servo_id, code, payload):
    """The bus drops a frame with a bad checksum by the length at its header:
    the header must be the one the decoder read the frame from, not the first
    0xFF of a run before it."""
    frame = fp.encode_packet(servo_id, code, payload)
    stream = noise + b"\xff" * extra + frame
    i = fp.header_index(stream)
    assert stream[i + 2] == servo_id and fp.frame_length(stream[i:]) == len(frame)
    assert fp.decode_packet(stream) == (fp.Packet(servo_id, code, payload), len(stream))
