"""NatNet (OptiTrack Motive) packets: parse and build the parts teledora uses.

Written against the documented NatNet 3.x/4.x layout. All integers and floats
are little-endian. Every packet starts with ``u16 message_id, u16 payload_size``.

Messages handled here:

* ``CONNECT`` (0): ``sSender`` = name (256-byte, NUL padded), app version u8[4],
  NatNet version u8[4].
* ``SERVER_INFO`` (1): ``sSender`` + u64 high-resolution clock frequency (Hz),
  u16 data port, u8 is_multicast, u8[4] multicast group address.
* ``MODEL_DEF`` (5): data descriptions, parsed and built in
  :mod:`teledora.operators.mocap.natnet_model_def`.
* ``FRAME_OF_DATA`` (7): parsed and built in :mod:`teledora.operators.mocap.natnet_frame`,
  on the helpers defined here (bounds-checked reader, 4.1+ section sizes).
* ``ECHO_REQUEST`` (12) / ``ECHO_RESPONSE`` (13): u64 client stamp, echoed back
  with the server's u64 high-resolution clock, used to map Motive's clock onto
  the host clock.

Anything malformed raises a :class:`NatNetProtocolError` subclass; nothing is
ever read past the end of a buffer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

from teledora.operators.errors import ProtocolError


class NatNetProtocolError(ProtocolError):
    """A NatNet packet is malformed or cannot be interpreted."""


class NatNetTruncatedError(NatNetProtocolError):
    """A packet or one of its sections ends before its declared content."""


class NatNetVersionError(NatNetProtocolError):
    """The server speaks a NatNet version this parser does not support."""


class MessageId(IntEnum):
    """NatNet message ids (u16 at the start of every packet)."""

    CONNECT = 0
    SERVER_INFO = 1
    REQUEST = 2
    RESPONSE = 3
    REQUEST_MODEL_DEF = 4
    MODEL_DEF = 5
    REQUEST_FRAME_OF_DATA = 6
    FRAME_OF_DATA = 7
    MESSAGE_STRING = 8
    DISCONNECT = 9
    KEEP_ALIVE = 10
    DISCONNECT_BY_TIMEOUT = 11
    ECHO_REQUEST = 12
    ECHO_RESPONSE = 13
    UNRECOGNIZED_REQUEST = 100


SUPPORTED_MAJOR_VERSIONS = (3, 4)
"""NatNet major versions whose frame layout this module knows."""

NAME_LENGTH = 256
HEADER = struct.Struct("<HH")
MAX_PAYLOAD_BYTES = 65503  # largest UDP payload minus the NatNet header
_SENDER = struct.Struct(f"<{NAME_LENGTH}s4B4B")
_SERVER_TAIL = struct.Struct("<QHB4B")

Version = tuple[int, int, int, int]
"""A NatNet or application version (major, minor, build, revision)."""


@dataclass(frozen=True)
class Packet:
    """One NatNet packet: message id and payload bytes."""

    message_id: int
    payload: bytes


@dataclass(frozen=True)
class ServerInfo:
    """What Motive says about itself in reply to CONNECT."""

    app_name: str
    app_version: Version
    natnet_version: Version
    high_res_clock_frequency_hz: int
    data_port: int
    is_multicast: bool
    multicast_group: str



class PayloadReader:
    """Bounds-checked cursor over a payload."""

    def __init__(self, data: bytes, where: str) -> None:
        self.data = memoryview(data)
        self.offset = 0
        self.where = where

    def remaining(self) -> int:
        return len(self.data) - self.offset

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.offset + n > len(self.data):
            raise NatNetTruncatedError(
                f"{self.where}: {what} needs {n} bytes at offset {self.offset}, only {self.remaining()} left"
            )
        chunk = self.data[self.offset : self.offset + n]
        self.offset += n
        return chunk

    def unpack(self, fmt: struct.Struct, what: str) -> tuple:
        return fmt.unpack(self.take(fmt.size, what))

    def i32(self, what: str) -> int:
        return struct.unpack("<i", self.take(4, what))[0]

    def count(self, what: str, item_size: int) -> int:
        """Reads an i32 element count and checks it fits in what is left."""
        n = self.i32(what)
        if n < 0 or n * item_size > self.remaining():
            raise NatNetTruncatedError(f"{self.where}: {what} = {n} cannot fit in {self.remaining()} bytes")
        return n

    def cstring(self, what: str) -> str:
        end = bytes(self.data[self.offset :]).find(b"\0")
        if end < 0:
            raise NatNetTruncatedError(f"{self.where}: {what} has no terminating NUL")
        raw = bytes(self.take(end + 1, what)[:-1])
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NatNetProtocolError(f"{self.where}: {what} is not UTF-8 ({exc})") from None


def has_section_sizes(version: Version) -> bool:
    """NatNet 4.1 added a byte size after each frame section's count."""
    return tuple(version[:2]) >= (4, 1)


def check_version(version: Version) -> None:
    """Raises NatNetVersionError unless ``version``'s frame layout is known."""
    if version[0] not in SUPPORTED_MAJOR_VERSIONS:
        raise NatNetVersionError(
            f"NatNet {'.'.join(map(str, version))} is not supported "
            f"(supported majors: {', '.join(map(str, SUPPORTED_MAJOR_VERSIONS))})"
        )


def split_packet(data: bytes) -> Packet:
    """Splits a datagram into message id and payload, checking the declared size."""
    if len(data) < HEADER.size:
        raise NatNetTruncatedError(f"datagram of {len(data)} bytes is shorter than the 4-byte header")
    message_id, size = HEADER.unpack_from(data)
    if len(data) - HEADER.size < size:
        raise NatNetTruncatedError(f"message {message_id} declares {size} payload bytes, got {len(data) - HEADER.size}")
    return Packet(message_id, bytes(data[HEADER.size : HEADER.size + size]))


def build_packet(message_id: int, payload: bytes = b"") -> bytes:
    """Prefixes ``payload`` with the NatNet header."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise NatNetProtocolError(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_BYTES}")
    return HEADER.pack(int(message_id), len(payload)) + payload


def _pack_sender(name: str, app_version: Version, natnet_version: Version) -> bytes:
    raw = name.encode("utf-8")[: NAME_LENGTH - 1]
    return _SENDER.pack(raw, *app_version, *natnet_version)


def _unpack_sender(reader: PayloadReader) -> tuple[str, Version, Version]:
    fields = reader.unpack(_SENDER, "sender")
    name = fields[0].split(b"\0", 1)[0].decode("utf-8", errors="replace")
    return name, tuple(fields[1:5]), tuple(fields[5:9])  # type: ignore[return-value]


def build_connect(client_name: str, natnet_version: Version, app_version: Version = (0, 1, 0, 0)) -> bytes:
    """A CONNECT packet announcing the client and the NatNet version it wants."""
    return build_packet(MessageId.CONNECT, _pack_sender(client_name, app_version, natnet_version))


def parse_connect(payload: bytes) -> tuple[str, Version]:
    """Client name and requested NatNet version of a CONNECT payload.

    An old-style payload (a bare string such as ``"Ping"``) yields version 0.0.0.0.
    """
    if len(payload) < _SENDER.size:
        return payload.split(b"\0", 1)[0].decode("utf-8", errors="replace"), (0, 0, 0, 0)
    name, _, natnet = _unpack_sender(PayloadReader(payload, "CONNECT"))
    return name, natnet


def build_server_info(info: ServerInfo) -> bytes:
    """A SERVER_INFO packet (the reply to CONNECT)."""
    group = [int(p) for p in info.multicast_group.split(".")]
    payload = _pack_sender(info.app_name, info.app_version, info.natnet_version) + _SERVER_TAIL.pack(
        info.high_res_clock_frequency_hz, info.data_port, int(info.is_multicast), *group
    )
    return build_packet(MessageId.SERVER_INFO, payload)


def parse_server_info(payload: bytes) -> ServerInfo:
    """Decodes a SERVER_INFO payload."""
    reader = PayloadReader(payload, "SERVER_INFO")
    name, app_version, natnet_version = _unpack_sender(reader)
    freq, port, multicast, *group = reader.unpack(_SERVER_TAIL, "connection info")
    if freq <= 0:
        raise NatNetProtocolError("SERVER_INFO: high-resolution clock frequency must be positive")
    return ServerInfo(name, app_version, natnet_version, int(freq), int(port), bool(multicast), ".".join(map(str, group)))


def build_echo_request(client_stamp: int) -> bytes:
    """ECHO_REQUEST carrying the client's send time (any u64 clock)."""
    return build_packet(MessageId.ECHO_REQUEST, struct.pack("<Q", client_stamp))


def parse_echo_request(payload: bytes) -> int:
    return PayloadReader(payload, "ECHO_REQUEST").unpack(struct.Struct("<Q"), "client stamp")[0]


def build_echo_response(client_stamp: int, server_stamp: int) -> bytes:
    """ECHO_RESPONSE: the client's stamp echoed, then Motive's high-resolution clock."""
    return build_packet(MessageId.ECHO_RESPONSE, struct.pack("<QQ", client_stamp, server_stamp))


def parse_echo_response(payload: bytes) -> tuple[int, int]:
    """(echoed client stamp, server high-resolution stamp)."""
    return PayloadReader(payload, "ECHO_RESPONSE").unpack(struct.Struct("<QQ"), "echo stamps")  # type: ignore[return-value]


def read_section_size(reader: PayloadReader, version: Version, what: str) -> int | None:
    """Reads a 4.1+ section byte size (None for older versions) and checks it fits."""
    if not has_section_sizes(version):
        return None
    size = reader.i32(f"{what} byte size")
    if size < 0 or size > reader.remaining():
        raise NatNetTruncatedError(f"{reader.where}: {what} declares {size} bytes, {reader.remaining()} left")
    return size


def check_section_size(reader: PayloadReader, start: int, size: int | None, what: str) -> None:
    """Raises unless the section that began at ``start`` used exactly its declared size."""
    if size is not None and reader.offset - start != size:
        raise NatNetProtocolError(
            f"{reader.where}: {what} declared {size} bytes but its content took {reader.offset - start}"
        )
