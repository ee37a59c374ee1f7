"""Feetech STS/SMS serial protocol ("protocol 0"): packets, checksums, registers.

Frame (half-duplex TTL bus, little-endian values)::

    0xFF 0xFF  ID  LENGTH  CODE  PARAM...  CHECKSUM

``LENGTH`` counts CODE, the params and the checksum (params + 2). ``CODE`` is
the instruction in a request and the servo's error byte in a status reply.
``CHECKSUM`` is the bitwise NOT of the low byte of ID + LENGTH + CODE + params.
``ID`` 0xFE is the broadcast id used by SYNC_READ and SYNC_WRITE.

SYNC_READ params are ``addr, n, id1, id2, ...``; each listed servo answers
with its own status packet, in order. SYNC_WRITE params are ``addr, n`` then
``id, n data bytes`` per servo; nobody answers.

Some registers hold sign-magnitude values (the sign in one high bit, not
two's complement): velocities and positions use bit 15, the homing offset bit
11, the load bit 10. :func:`encode_register` / :func:`decode_register` handle
that so callers work with plain signed ints.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable, Mapping

from teledora.operators.errors import ProtocolError

HEADER = b"\xff\xff"
BROADCAST_ID = 0xFE
MAX_ID = 0xFD


class FeetechProtocolError(ProtocolError):
    """Bytes that are not a valid Feetech packet, or a value that does not fit a register."""


class FeetechChecksumError(FeetechProtocolError):
    """A packet whose checksum does not match its content."""


class Instruction(enum.IntEnum):
    PING = 0x01
    READ = 0x02
    WRITE = 0x03
    REG_WRITE = 0x04
    ACTION = 0x05
    SYNC_READ = 0x82
    SYNC_WRITE = 0x83


class StatusError(enum.IntFlag):
    """Bits of the error byte in a status packet."""

    VOLTAGE = 0x01
    ANGLE_SENSOR = 0x02
    OVERHEAT = 0x04
    OVERCURRENT = 0x08
    OVERLOAD = 0x20


@dataclass(frozen=True)
class Register:
    """A control-table entry: address, size in bytes, sign bit (None: unsigned)."""

    address: int
    size: int
    sign_bit: int | None = None


# The subset of the STS/SMS control table the drivers use.
REGISTERS: dict[str, Register] = {
    "Model_Number": Register(3, 2),
    "ID": Register(5, 1),
    "Baud_Rate": Register(6, 1),
    "Min_Position_Limit": Register(9, 2),
    "Max_Position_Limit": Register(11, 2),
    "P_Coefficient": Register(21, 1),
    "D_Coefficient": Register(22, 1),
    "I_Coefficient": Register(23, 1),
    "Homing_Offset": Register(31, 2, sign_bit=11),
    "Operating_Mode": Register(33, 1),
    "Torque_Enable": Register(40, 1),
    "Acceleration": Register(41, 1),
    "Goal_Position": Register(42, 2, sign_bit=15),
    "Goal_Time": Register(44, 2),
    "Goal_Velocity": Register(46, 2, sign_bit=15),
    "Torque_Limit": Register(48, 2),
    "Lock": Register(55, 1),
    "Present_Position": Register(56, 2, sign_bit=15),
    "Present_Velocity": Register(58, 2, sign_bit=15),
    "Present_Load": Register(60, 2, sign_bit=10),
    "Present_Voltage": Register(62, 1),
    "Present_Temperature": Register(63, 1),
    "Status": Register(65, 1),
    "Moving": Register(66, 1),
    "Present_Current": Register(69, 2),
}

OPERATING_MODE_POSITION = 0
OPERATING_MODE_VELOCITY = 1
MODEL_NUMBERS = {"sts3215": 777, "sts3250": 2825, "sts3095": 2569}


def register(name: str) -> Register:
    try:
        return REGISTERS[name]
    except KeyError:
        raise FeetechProtocolError(f"unknown register {name!r}") from None


def checksum(body: bytes | Iterable[int]) -> int:
    """NOT of the low byte of the sum of ID, LENGTH, CODE and params."""
    return (~sum(body)) & 0xFF


def encode_register(name: str, value: int) -> bytes:
    """A signed value as the register's little-endian bytes (sign-magnitude where needed).

    Raises:
        FeetechProtocolError: the value does not fit.
    """
    reg = register(name)
    value = int(value)
    if reg.sign_bit is not None:
        magnitude = abs(value)
        if magnitude >= 1 << reg.sign_bit:
            raise FeetechProtocolError(f"{name}: |{value}| does not fit {reg.sign_bit} magnitude bits")
        raw = magnitude | ((1 << reg.sign_bit) if value < 0 else 0)
    else:
        if not 0 <= value < 1 << (8 * reg.size):
            raise FeetechProtocolError(f"{name}: {value} out of range for {reg.size} unsigned bytes")
        raw = value
    return raw.to_bytes(reg.size, "little")


def decode_register(name: str, data: bytes) -> int:
    """Register bytes as a signed int (sign-magnitude decoded)."""
    reg = register(name)
    if len(data) != reg.size:
        raise FeetechProtocolError(f"{name}: expected {reg.size} bytes, got {len(data)}")
    raw = int.from_bytes(data, "little")
    if reg.sign_bit is not None and raw & (1 << reg.sign_bit):
        return -(raw & ((1 << reg.sign_bit) - 1))
    return raw


@dataclass(frozen=True)
class Packet:
    """A decoded frame: ``code`` is the instruction (request) or error byte (status)."""

    servo_id: int
    code: int
    params: bytes

    @property
    def errors(self) -> StatusError:
        return StatusError(self.code & 0x2F)


def encode_packet(servo_id: int, code: int, params: bytes = b"") -> bytes:
    """Frames one packet (request or status)."""
    if not 0 <= servo_id <= BROADCAST_ID:
        raise FeetechProtocolError(f"servo id {servo_id} out of range 0..{BROADCAST_ID}")
    if len(params) > 250:
        raise FeetechProtocolError(f"{len(params)} params do not fit one packet")
    body = bytes([servo_id, len(params) + 2, code & 0xFF]) + bytes(params)
    return HEADER + body + bytes([checksum(body)])


def decode_packet(buffer: bytes) -> tuple[Packet | None, int]:
    """Finds the first complete packet in ``buffer``.

    Returns:
        (packet, bytes consumed). ``packet`` is None when more bytes are needed;
        bytes before a header are skipped (and counted as consumed).

    Raises:
        FeetechChecksumError: a complete frame with a wrong checksum (its bytes are
            reported in the message; the caller drops ``len`` of it and resyncs).
        FeetechProtocolError: a frame with an impossible length field.
    """
    start = header_index(buffer)
    if start < 0:
        # keep a trailing 0xFF, it may be the first header byte
        return None, len(buffer) - (1 if buffer.endswith(b"\xff") else 0)
    if len(buffer) < start + 4:
        return None, start
    servo_id, length = buffer[start + 2], buffer[start + 3]
    if length < 2:
        raise FeetechProtocolError(f"frame from id {servo_id} has impossible length {length}")
    end = start + 4 + length
    if len(buffer) < end:
        return None, start
    body = buffer[start + 2 : end - 1]
    if checksum(body) != buffer[end - 1]:
        raise FeetechChecksumError(
            f"checksum mismatch from id {servo_id}: got 0x{buffer[end - 1]:02x}, expected 0x{checksum(body):02x} "
            f"(frame {buffer[start:end].hex(' ')})"
        )
    return Packet(servo_id, buffer[start + 4], bytes(buffer[start + 5 : end - 1])), end


def header_index(buffer: bytes | bytearray) -> int:
    """Where the first frame's header starts (-1: none yet). A third 0xFF is
    not an id (0xFF is no servo's), so a run of 0xFF bytes ends at the
    header whose next byte is the id: ``buffer[i + 2]`` is the id and
    ``buffer[i + 3]`` the length of the frame found."""
    start = buffer.find(HEADER)
    if start < 0:
        return -1
    while start + 2 < len(buffer) and buffer[start + 2] == 0xFF:
        start += 1
    return start


def frame_length(buffer: bytes) -> int | None:
    """Length of the frame starting at a header at offset 0, if the length byte is there."""
    if len(buffer) < 4 or buffer[:2] != HEADER:
        return None
    return 4 + buffer[3]


def ping(servo_id: int) -> bytes:
    return encode_packet(servo_id, Instruction.PING)


def read(servo_id: int, address: int, size: int) -> bytes:
    return encode_packet(servo_id, Instruction.READ, bytes([address, size]))


def write(servo_id: int, address: int, data: bytes) -> bytes:
    return encode_packet(servo_id, Instruction.WRITE, bytes([address]) + bytes(data))


def sync_read(servo_ids: Iterable[int], address: int, size: int) -> bytes:
    ids = list(servo_ids)
    if not ids:
        raise FeetechProtocolError("sync_read needs at least one servo id")
    return encode_packet(BROADCAST_ID, Instruction.SYNC_READ, bytes([address, size, *ids]))


def sync_write(address: int, size: int, data: Mapping[int, bytes]) -> bytes:
    if not data:
        raise FeetechProtocolError("sync_write needs at least one servo")
    params = bytearray([address, size])
    for servo_id, payload in data.items():
        if len(payload) != size:
            raise FeetechProtocolError(f"sync_write: id {servo_id} has {len(payload)} bytes, expected {size}")
        params.append(servo_id)
        params.extend(payload)
    return encode_packet(BROADCAST_ID, Instruction.SYNC_WRITE, bytes(params))


def split_sync_write(params: bytes) -> tuple[int, int, dict[int, bytes]]:
    """Parses SYNC_WRITE params into (address, size, {id: data})."""
    if len(params) < 2:
        raise FeetechProtocolError("SYNC_WRITE without address and size")
    address, size = params[0], params[1]
    rest = params[2:]
    if size == 0 or len(rest) % (size + 1):
        raise FeetechProtocolError(f"SYNC_WRITE payload of {len(rest)} bytes is not a multiple of {size + 1}")
    return address, size, {rest[i]: bytes(rest[i + 1 : i + 1 + size]) for i in range(0, len(rest), size + 1)}


def span(names: Iterable[str]) -> tuple[int, int]:
    """(first address, byte count) of one contiguous read covering ``names``."""
    regs = [register(n) for n in names]
    start = min(r.address for r in regs)
    end = max(r.address + r.size for r in regs)
    return start, end - start


def slice_register(name: str, block_address: int, block: bytes) -> int:
    """Decodes register ``name`` out of a block read starting at ``block_address``."""
    reg = register(name)
    off = reg.address - block_address
    if off < 0 or off + reg.size > len(block):
        raise FeetechProtocolError(f"{name} is not inside the block read at {block_address} ({len(block)} bytes)")
    return decode_register(name, block[off : off + reg.size])
