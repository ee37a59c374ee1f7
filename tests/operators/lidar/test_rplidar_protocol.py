
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.lidar.rplidar_protocol import (
    CMD_GET_HEALTH,
    CMD_SCAN,
    MODE_MULTIPLE,
    TYPE_SCAN,
    SAMPLE_LEN,
    RplidarProtocolError,
    SampleStreamParser,
    encode_request,
    expect_descriptor,
    parse_descriptor,
    parse_health,
    parse_info,
)
from teledora.fakes.rplidar_a1 import INFO_PAYLOAD, descriptor, encode_sample  # noqa: E402

# quality 15, within a turn (S 0, !S 1), 90.0 deg, 1000 mm, worked out by hand from the protocol.
HAND_SAMPLE = bytes([0x3E, 0x01, 0x2D, 0xA0, 0x0F])


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
    assert len(parser.feed(encode_sample(False, 15, 89.0, 900.0))) == 0  # the anchor: never handed out
    assert len(parser.feed(HAND_SAMPLE)) == 0  # handed out once the next window confirms it
    batch = parser.feed(encode_sample(False, 15, 91.0, 1000.0))
    assert len(batch) == 1
    assert not batch.start[0] and batch.quality[0] == 15
    assert batch.angle_deg[0] == pytest.approx(90.0)
    assert batch.distance_m[0] == pytest.approx(1.0)
    assert encode_sample(False, 15, 90.0, 1000.0) == HAND_SAMPLE
    # the same with the start flag: S 1, !S 0 in the two low bits
    assert encode_sample(True, 15, 0.5, 1000.0)[0] == 0x3D


def test_samples_split_across_chunks_keep_offsets_relative_to_each_chunk():
    stream = b"".join(encode_sample(i == 0, 40, i * 1.5, 500 + i) for i in range(7))
    parser = SampleStreamParser()
    a = parser.feed(stream[:13])  # not enough windows yet to confirm sync
    b = parser.feed(stream[13:])
    assert len(a) + len(b) == 5  # the first anchors, the seventh waits for the window that confirms it
    np.testing.assert_allclose(np.concatenate([a.angle_deg, b.angle_deg]), np.arange(1, 6) * 1.5)
    assert b.start[0]  # the anchor began the turn: its successor carries the flag
    assert b.end_offset[-1] == 6 * 5 - 13


def test_resync_after_a_stray_byte_loses_the_sample_it_follows_and_the_new_anchor():
    samples = [encode_sample(i == 0, 40, i * 1.0, 1000 + i) for i in range(21)]
    stream = b"".join(samples[:10]) + b"\x00" + b"".join(samples[10:])
    parser = SampleStreamParser()
    batch = parser.feed(stream)
    # 0 and 10 anchor runs, 9 cannot be confirmed by the window after it; the last waits
    np.testing.assert_allclose(batch.distance_m * 1000, 1000 + np.delete(np.arange(20), [0, 9, 10]))
    assert parser.resync_events == 1 and parser.resync_bytes == 6 + 2 * 5


def test_starting_mid_sample_finds_the_sample_boundary():
    samples = b"".join(encode_sample(False, 40, 10.0 + i, 2000) for i in range(30))
    parser = SampleStreamParser()
    batch = parser.feed(samples[3:])  # the first two and a half bytes belong to a lost sample
    assert len(batch) == 27  # the first whole one anchors, the last waits for the window that confirms it
    np.testing.assert_allclose(batch.angle_deg, 12.0 + np.arange(27))
    assert parser.resync_bytes == 2 + 5


def test_window_with_broken_check_bit_or_angle_over_360_is_not_a_sample():
    bad_check = bytes([0x3D, 0x00, 0x2D, 0xA0, 0x0F])
    bad_angle = bytes([0x3D, 0x01, 0xFF, 0xA0, 0x0F])  # 32767/64 deg > 360
    parser = SampleStreamParser(confirm_windows=1)
    assert len(parser.feed(bad_check)) == 0
    parser.reset()
    assert len(parser.feed(bad_angle)) == 0


def _turn_stream(n: int = 200, step_deg: float = 1.2, first: float = 0.6) -> tuple[bytes, np.ndarray]:
    angles = (first + step_deg * np.arange(n)) % 360.0
    starts = np.r_[True, angles[1:] < angles[:-1]]
    data = b"".join(encode_sample(bool(s), 40, float(a), 1500.0) for s, a in zip(starts, angles))
    return data, angles


def test_phantom_window_that_passes_the_bit_checks_is_rejected():
    data, angles = _turn_stream(60)
    phantom = encode_sample(False, 40, 200.0, 300.0)  # well formed, but 190 degrees off
    stream = data[: 30 * 5] + phantom + data[30 * 5:]
    parser = SampleStreamParser()
    batch = parser.feed(stream)
    # lost: the two anchors (the first window, the one after the phantom), the phantom,
    # the sample before it (no window confirms it) and the last (still waiting)
    np.testing.assert_allclose(batch.angle_deg, np.delete(np.round(angles * 64) / 64, [0, 29, 30, 59]))
    assert parser.rejected_windows == 1 and parser.resync_bytes == 10 + 2 * 5


def test_start_flag_in_mid_turn_is_a_phantom():
    data, angles = _turn_stream(60)
    stream = data[: 20 * 5] + encode_sample(True, 40, float(angles[19]) + 0.5, 1500.0) + data[20 * 5:]
    batch = SampleStreamParser().feed(stream)
    # out: the phantom, sample 19, the two anchors (samples 0 and 20) and the waiting last
    assert len(batch) == 56 and int(batch.start.sum()) == 1


def test_flipped_high_angle_bit_drops_that_sample_and_the_one_it_should_confirm():
    data, angles = _turn_stream(60)
    broken = bytearray(data)
    broken[25 * 5 + 2] ^= 0x10  # angle + 32 degrees
    batch = SampleStreamParser().feed(bytes(broken))
    # and the one before it, the anchors (the first, and the one after the flip) and the waiting last
    expected = np.delete(np.round(angles * 64) / 64, [0, 24, 25, 26, 59])
    np.testing.assert_allclose(batch.angle_deg, expected)


def test_a_good_sample_after_a_bad_anchor_starts_the_new_run():
    data, angles = _turn_stream(60)
    parser = SampleStreamParser()
    parser.feed(encode_sample(False, 40, 90.0, 1.0) * 3)  # a wrong anchor
    batch = parser.feed(data)  # the first good sample does not continue it
    # the first good sample anchors the new run (its start flag passes on), the last waits
    assert len(batch) == 58 and batch.angle_deg[0] == pytest.approx(1.8, abs=1 / 64) and batch.start[0]


def test_random_garbage_bursts_never_decode_as_samples():
    rng = np.random.default_rng(1)
    data, angles = _turn_stream(2000)
    pieces, truth = [], set(np.round(angles * 64).astype(int).tolist())
    for k in range(0, 2000, 50):
        pieces.append(data[k * 5:(k + 50) * 5])
        pieces.append(rng.integers(0, 256, int(rng.integers(1, 60)), dtype=np.uint8).tobytes())
    parser = SampleStreamParser()
    batch = parser.feed(b"".join(pieces))
    decoded = set(np.round(batch.angle_deg * 64).astype(int).tolist())
    assert decoded <= truth
    assert np.all(batch.distance_m == pytest.approx(1.5))
    assert len(batch) > 1700 and parser.resync_bytes > 0


def test_a_garbage_window_just_before_real_samples_is_not_handed_out():
    """The last window of a burst can pass the bit checks with an angle the first
    real sample after it continues; only the samples after it vouch for it."""
    real = b"".join(encode_sample(False, 47, 11.0 + k, 1500.0) for k in range(6))
    lucky = encode_sample(False, 9, 10.2, 7000.0)  # bit-valid, 0.8 degrees before the first real one
    parser = SampleStreamParser()
    batch = parser.feed(b"\x00\x13\x77" + lucky + real)
    assert len(batch) == 5  # the lucky window anchors the run, the last waits for the next
    assert np.all(batch.distance_m == pytest.approx(1.5))
    assert batch.angle_deg[0] == pytest.approx(11.0, abs=1 / 64)
    assert parser.samples * SAMPLE_LEN + parser.resync_bytes + len(parser._pending) == len(lucky + real) + 3


def test_an_anchor_that_starts_a_turn_passes_its_start_flag_on():
    data = encode_sample(True, 47, 0.2, 1500.0) + b"".join(encode_sample(False, 47, 1.2 + k, 1500.0) for k in range(5))
    batch = SampleStreamParser().feed(data)
    assert len(batch) == 4 and batch.start.tolist() == [True, False, False, False]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.lists(st.integers(1, 400), max_size=20))
def test_parser_survives_any_bytes_in_any_chunking(data, cuts):
    whole = SampleStreamParser()
    ref = whole.feed(data)
    split = SampleStreamParser()
    parts, pos = [], 0
    for c in cuts:
        parts.append(split.feed(data[pos:pos + c]))
        assert len(split._pending) < SAMPLE_LEN * max(split.confirm_windows, 2)
        pos += c
    parts.append(split.feed(data[pos:]))
    got = np.concatenate([p.angle_deg for p in parts])
    np.testing.assert_array_equal(got, ref.angle_deg)
    np.testing.assert_array_equal(np.concatenate([p.distance_m for p in parts]), ref.distance_m)
    assert np.all((ref.angle_deg >= 0) & (ref.angle_deg < 360)) and np.all(ref.distance_m >= 0)
    assert np.all((ref.end_offset >= SAMPLE_LEN) & (ref.end_offset <= len(data)))
    assert whole.samples * SAMPLE_LEN + whole.resync_bytes + len(whole._pending) == len(data)


def test_bit_errors_never_decode_a_grossly_wrong_angle():
    """One flipped bit in 1e-3 of the bytes (seeded): no decoded angle off by more
    than 2 degrees. Distance bits carry no redundancy and are not checked (a
    flipped high distance bit looks like a thin object: docs/lidar.md)."""
    rng = np.random.default_rng(7)
    n, step = 20_000, 360.0 * 5.5 / 2000.0
    angles = (np.arange(1, n + 1) * step) % 360.0
    starts = np.r_[False, angles[1:] < angles[:-1]]
    data = bytearray(b"".join(encode_sample(bool(s), 47, float(a), 2000.0) for s, a in zip(starts, angles)))
    for i in np.flatnonzero(rng.random(len(data)) < 1e-3):
        data[i] ^= 1 << int(rng.integers(8))
    parser = SampleStreamParser()
    batch = parser.feed(bytes(data))
    sent = np.round(angles[(batch.end_offset - SAMPLE_LEN) // SAMPLE_LEN] * 64) / 64  # flips move no byte
    error = np.abs((batch.angle_deg - sent + 180.0) % 360.0 - 180.0)
    assert len(batch) > 0.99 * n
    assert np.count_nonzero(error > 2.0) == 0
    assert parser.rejected_windows > 0


MARKER_MM = 9999.0  # a distance no sample of the test streams has


def _clear_check_bit(window: bytes) -> bytes:
    return bytes([window[0], window[1] & 0xFE, *window[2:]])


def test_a_sample_with_its_check_bit_clear_is_not_handed_out_and_costs_a_resync():
    """A window whose angle continues the stream but whose check bit C is 0 is not a sample,
    however plausible the rest of it looks."""
    data, angles = _turn_stream(40)
    samples = [data[k * SAMPLE_LEN:(k + 1) * SAMPLE_LEN] for k in range(40)]
    bad = (10, 20, 30)
    for k in bad:
        samples[k] = _clear_check_bit(encode_sample(False, 40, float(angles[k]), MARKER_MM))
    parser = SampleStreamParser()
    batch = parser.feed(b"".join(samples))
    assert not np.any(batch.distance_m == pytest.approx(MARKER_MM / 1000.0))
    # each broken window breaks the run: it, the sample before it (unconfirmed) and the
    # next anchor are lost, besides the first anchor and the waiting last sample
    lost = {0, 39} | {j for k in bad for j in (k - 1, k, k + 1)}
    np.testing.assert_allclose(batch.angle_deg, np.delete(np.round(angles * 64) / 64, sorted(lost)))
    assert parser.resync_events == len(bad)


def test_a_stream_whose_check_bits_are_all_clear_decodes_nothing():
    data, _ = _turn_stream(100)
    stream = b"".join(_clear_check_bit(data[k:k + SAMPLE_LEN]) for k in range(0, len(data), SAMPLE_LEN))
    parser = SampleStreamParser()
    assert len(parser.feed(stream)) == 0
    assert parser.samples == 0 and parser.resync_bytes > len(stream) - 3 * SAMPLE_LEN


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 119), max_size=30), st.lists(st.integers(1, 200), max_size=8))
def test_no_window_with_a_clear_check_bit_is_ever_handed_out(cleared, cuts):
    data, angles = _turn_stream(120)
    stream = b"".join(
        _clear_check_bit(data[k * SAMPLE_LEN:(k + 1) * SAMPLE_LEN]) if k in cleared else data[k * SAMPLE_LEN:(k + 1) * SAMPLE_LEN]
        for k in range(120))
    parser = SampleStreamParser()
    parts, pos = [], 0
    for c in cuts:
        parts.append((pos, parser.feed(stream[pos:pos + c])))
        pos += c
    parts.append((pos, parser.feed(stream[pos:])))
    begins = np.concatenate([p + b.end_offset - SAMPLE_LEN for p, b in parts]).astype(int)
    assert all(stream[i + 1] & 0x1 for i in begins)
    assert len(begins) <= 120 - len(cleared)
