
import numpy as np
import pytest

from teledora.operators.lidar.rplidar_protocol import (
    CMD_GET_HEALTH,
    CMD_SCAN,
    MODE_MULTIPLE,
    TYPE_SCAN,
    RplidarProtocolError,
    SampleStreamParser,
    encode_request,
    expect_descriptor,
    parse_descriptor,
    parse_health,
    parse_info,
)
from teledora.fakes.rplidar_a1 import INFO_PAYLOAD, descriptor, encode_sample  # noqa: E402

# quality 15, new turn, 90.0 deg, 1000 mm, worked out by hand from the protocol.
HAND_SAMPLE = bytes([0x3D, 0x01, 0x2D, 0xA0, 0x0F])


def test_requests_without_and_with_payload():
    assert encode_request(CMD_SCAN) == b"\xa5\x20"
    # express scan request with a 5-byte payload: checksum is the XOR of all bytes
    req = encode_request(0x82, b"\x00\x00\x00\x00\x00")
    assert req[:3] == b"\xa5\x82\x05"
    assert req[-1] == 0xA5 ^ 0x82 ^ 0x05


def test_scan_descriptor_bytes():
    desc = expect_descriptor(bytes.fromhex("a55a0500004081"), 5, MODE_MULTIPLE, TYPE_SCAN)
    assert (desc.length, desc.mode, desc.data_type) == (5, 1, 0x81)


def test_descriptor_from_a_streaming_device_is_refused_with_a_reason():
    with pytest.raises(RplidarProtocolError, match="still streaming"):
        parse_descriptor(HAND_SAMPLE + b"\x3e\x01")


def test_descriptor_of_the_wrong_request_is_refused():
    with pytest.raises(RplidarProtocolError, match="unexpected descriptor"):
        expect_descriptor(descriptor(3, False, 0x06), 5, MODE_MULTIPLE, TYPE_SCAN)


def test_info_and_health_payloads():
    info = parse_info(INFO_PAYLOAD)
    assert (info.model, info.firmware_major, info.firmware_minor, info.hardware) == (0x18, 1, 0x1D, 7)
    assert info.serial_number == bytes(range(0x10, 0x20)).hex().upper()
    health = parse_health(bytes([2, 0x34, 0x12]))
    assert health.status_name == "error" and health.error_code == 0x1234
    with pytest.raises(RplidarProtocolError):
        parse_health(bytes([7, 0, 0]))
    with pytest.raises(RplidarProtocolError):
        parse_info(INFO_PAYLOAD[:-1])
    assert CMD_GET_HEALTH == 0x52


def test_hand_computed_sample():
    parser = SampleStreamParser(confirm_windows=1)
    batch = parser.feed(HAND_SAMPLE)
    assert len(batch) == 1
    assert bool(batch.start[0]) and batch.quality[0] == 15
    assert batch.angle_deg[0] == pytest.approx(90.0)
    assert batch.distance_m[0] == pytest.approx(1.0)
    assert encode_sample(True, 15, 90.0, 1000.0) == HAND_SAMPLE


def test_samples_split_across_chunks_keep_offsets_relative_to_each_chunk():
    stream = b"".join(encode_sample(i == 0, 40, i * 1.5, 500 + i) for i in range(6))
    parser = SampleStreamParser()
    a = parser.feed(stream[:13])  # not enough windows yet to confirm sync
    b = parser.feed(stream[13:])
    assert len(a) + len(b) == 6
    np.testing.assert_allclose(np.concatenate([a.angle_deg, b.angle_deg]), np.arange(6) * 1.5)
    assert b.end_offset[-1] == len(stream) - 13


def test_resync_after_garbage_byte_loses_only_the_broken_sample():
    samples = [encode_sample(i == 0, 40, i * 1.0, 1000 + i) for i in range(20)]
    stream = b"".join(samples[:10]) + b"\x00" + b"".join(samples[10:])
    parser = SampleStreamParser()
    batch = parser.feed(stream)
    assert len(batch) == 20
    np.testing.assert_allclose(batch.distance_m * 1000, 1000 + np.arange(20))
    assert parser.resync_events == 1 and parser.resync_bytes == 1


def test_starting_mid_sample_finds_the_sample_boundary():
    samples = b"".join(encode_sample(False, 40, 10.0 + i, 2000) for i in range(30))
    parser = SampleStreamParser()
    batch = parser.feed(samples[3:])  # the first two and a half bytes belong to a lost sample
    assert len(batch) == 29
    np.testing.assert_allclose(batch.angle_deg, 11.0 + np.arange(29))
    assert parser.resync_bytes == 2


def test_window_with_broken_check_bit_or_angle_over_360_is_not_a_sample():
    bad_check = bytes([0x3D, 0x00, 0x2D, 0xA0, 0x0F])
    bad_angle = bytes([0x3D, 0x01, 0xFF, 0xA0, 0x0F])  # 32767/64 deg > 360
    parser = SampleStreamParser(confirm_windows=1)
    assert len(parser.feed(bad_check)) == 0
    parser.reset()
    assert len(parser.feed(bad_angle)) == 0
