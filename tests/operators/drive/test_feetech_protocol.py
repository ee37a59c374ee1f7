import pytest

from teledora.operators.drive import feetech_protocol as fp
def test_known_frames_from_the_protocol_manual():
    assert fp.ping(1) == bytes.fromhex("ff ff 01 02 01 fb")
    assert fp.read(1, 0x38, 2) == bytes.fromhex("ff ff 01 04 02 38 02 be")
    # WRITE goal position 2048 (0x0800) to id 1 at address 42
    frame = fp.write(1, 42, fp.encode_register("Goal_Position", 2048))
    assert frame[:7] == bytes.fromhex("ff ff 01 05 03 2a 00") and frame[7] == 0x08
    assert frame[-1] == (~(1 + 5 + 3 + 42 + 0 + 8)) & 0xFF


def test_sync_frames_layout():
    sr = fp.sync_read([1, 2, 3], 56, 15)
    assert sr == fp.encode_packet(0xFE, 0x82, bytes([56, 15, 1, 2, 3]))
    sw = fp.sync_write(46, 2, {8: b"\x10\x00", 9: b"\x00\x80"})
    pkt, used = fp.decode_packet(sw)
    assert used == len(sw) and pkt.servo_id == 0xFE and pkt.code == 0x83
    assert fp.split_sync_write(pkt.params) == (46, 2, {8: b"\x10\x00", 9: b"\x00\x80"})


@pytest.mark.parametrize("name,value,raw", [
    ("Goal_Velocity", 1300, b"\x14\x05"),
    ("Goal_Velocity", -1300, b"\x14\x85"),
    ("Homing_Offset", -5, b"\x05\x08"),
    ("Present_Load", -3, b"\x03\x04"),
    ("Torque_Enable", 1, b"\x01"),
])
def test_sign_magnitude_registers(name, value, raw):
    assert fp.encode_register(name, value) == raw
    assert fp.decode_register(name, raw) == value


def test_out_of_range_values_are_refused():
    with pytest.raises(fp.FeetechProtocolError):
        fp.encode_register("Goal_Velocity", 1 << 15)
    with pytest.raises(fp.FeetechProtocolError):
        fp.encode_register("Torque_Enable", 256)
    with pytest.raises(fp.FeetechProtocolError):
        fp.register("Goal_Speed_Typo")


def test_decode_skips_garbage_waits_for_bytes_and_rejects_bad_checksum():
    frame = fp.encode_packet(3, 0, b"\x01\x02")
    pkt, used = fp.decode_packet(b"\x00\x13" + frame + b"\xff")
    assert pkt == fp.Packet(3, 0, b"\x01\x02") and used == 2 + len(frame)
    assert fp.decode_packet(frame[:-1]) == (None, 0)
    bad = frame[:-1] + bytes([frame[-1] ^ 0x5A])
    with pytest.raises(fp.FeetechChecksumError, match="checksum"):
        fp.decode_packet(bad)
    with pytest.raises(fp.FeetechProtocolError):
        fp.decode_packet(b"\xff\xff\x01\x01\x00\x00")


def test_status_error_bits_and_block_slicing():
    assert fp.Packet(1, 0x20, b"").errors == fp.StatusError.OVERLOAD
    start, size = fp.span(["Present_Position", "Present_Velocity", "Present_Current"])
    assert (start, size) == (56, 15)
    block = bytearray(15)
    block[0:2] = fp.encode_register("Present_Position", 4000)
    block[2:4] = fp.encode_register("Present_Velocity", -120)
    block[13:15] = (77).to_bytes(2, "little")
    assert fp.slice_register("Present_Velocity", start, bytes(block)) == -120
    assert fp.slice_register("Present_Current", start, bytes(block)) == 77
