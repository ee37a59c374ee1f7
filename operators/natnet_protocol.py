"""NatNet (OptiTrack Motive) packets: parse and build the parts teledora uses.

Written against the documented NatNet 3.x/4.x layout. All integers and floats
are little-endian. Every packet starts with ``u16 message_id, u16 payload_size``.

Messages handled here:

* ``CONNECT`` (0): ``sSender`` = name (256-byte, NUL padded), app version u8[4],
  NatNet version u8[4].
* ``SERVER_INFO`` (1): ``sSender`` + u64 high-resolution clock frequency (Hz),
  u16 data port, u8 is_multicast, u8[4] multicast group address.
* ``MODEL_DEF`` (5): data descriptions; only rigid-body descriptions are read
  (name, id, parent id, pivot offset), the others are skipped with their size.
* ``FRAME_OF_DATA`` (7): frame number, marker sets, legacy markers, rigid
  bodies (id, position, quaternion x y z w, mean marker error, params bit 0 =
  tracking valid), skeletons, assets (4.1+), labeled markers, force plates,
  devices, then the suffix: SMPTE timecode, timestamp (f64 s), three u64
  high-resolution stamps (camera mid-exposure, data received, transmit),
  the precision timestamp (4.1+), i16 params and an optional i32
  end-of-data tag. From NatNet 4.1 every
  section count is followed by its size in bytes, which is checked.
* ``ECHO_REQUEST`` (12) / ``ECHO_RESPONSE`` (13): u64 client stamp, echoed back
  with the server's u64 high-resolution clock, used to map Motive's clock onto
  the host clock.

Anything malformed raises a :class:`NatNetProtocolError` subclass; nothing is
ever read past the end of a buffer.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class NatNetProtocolError(ValueError):
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
_RIGID_BODY = struct.Struct("<i3f4ffh")
_LABELED_MARKER = struct.Struct("<i3ffhf")
_SUFFIX_30 = struct.Struct("<IIdQQQ")
_PRECISION = struct.Struct("<II")
_END_OF_DATA = struct.Struct("<i")  # optional end-of-data tag after the frame params
_DESCRIPTION_RIGID_BODY = 1

Version = tuple[int, int, int, int]


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


@dataclass(frozen=True)
class RigidBodySample:
    """One rigid body in one frame, in Motive's frame and units (m)."""

    id: int
    position: tuple[float, float, float]
    orientation_xyzw: tuple[float, float, float, float]
    mean_error_m: float
    tracking_valid: bool


@dataclass(frozen=True)
class LabeledMarker:
    """A labeled marker (only carried so the fake can send realistic frames)."""

    id: int
    position: tuple[float, float, float]
    size_m: float
    params: int = 0
    residual_m: float = 0.0


@dataclass(frozen=True)
class FrameOfData:
    """The fields of a FRAME_OF_DATA packet that teledora uses."""

    frame_number: int
    rigid_bodies: tuple[RigidBodySample, ...]
    timestamp_s: float = 0.0
    stamp_camera_mid_exposure: int = 0
    stamp_data_received: int = 0
    stamp_transmit: int = 0
    timecode: int = 0
    timecode_sub: int = 0
    precision_timestamp_s: int = 0
    precision_timestamp_frac: int = 0
    is_recording: bool = False
    tracked_models_changed: bool = False
    labeled_markers: tuple[LabeledMarker, ...] = field(default=())


@dataclass(frozen=True)
class RigidBodyDescription:
    """A rigid body's name and id, from MODEL_DEF."""

    name: str
    id: int
    parent_id: int = -1
    pivot_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)


class _Reader:
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


def _unpack_sender(reader: _Reader) -> tuple[str, Version, Version]:
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
    name, _, natnet = _unpack_sender(_Reader(payload, "CONNECT"))
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
    reader = _Reader(payload, "SERVER_INFO")
    name, app_version, natnet_version = _unpack_sender(reader)
    freq, port, multicast, *group = reader.unpack(_SERVER_TAIL, "connection info")
    if freq <= 0:
        raise NatNetProtocolError("SERVER_INFO: high-resolution clock frequency must be positive")
    return ServerInfo(name, app_version, natnet_version, int(freq), int(port), bool(multicast), ".".join(map(str, group)))


def build_echo_request(client_stamp: int) -> bytes:
    """ECHO_REQUEST carrying the client's send time (any u64 clock)."""
    return build_packet(MessageId.ECHO_REQUEST, struct.pack("<Q", client_stamp))


def parse_echo_request(payload: bytes) -> int:
    return _Reader(payload, "ECHO_REQUEST").unpack(struct.Struct("<Q"), "client stamp")[0]


def build_echo_response(client_stamp: int, server_stamp: int) -> bytes:
    """ECHO_RESPONSE: the client's stamp echoed, then Motive's high-resolution clock."""
    return build_packet(MessageId.ECHO_RESPONSE, struct.pack("<QQ", client_stamp, server_stamp))


def parse_echo_response(payload: bytes) -> tuple[int, int]:
    """(echoed client stamp, server high-resolution stamp)."""
    return _Reader(payload, "ECHO_RESPONSE").unpack(struct.Struct("<QQ"), "echo stamps")  # type: ignore[return-value]


def _section_size(reader: _Reader, version: Version, what: str) -> int | None:
    if not has_section_sizes(version):
        return None
    size = reader.i32(f"{what} byte size")
    if size < 0 or size > reader.remaining():
        raise NatNetTruncatedError(f"{reader.where}: {what} declares {size} bytes, {reader.remaining()} left")
    return size


def _check_section(reader: _Reader, start: int, size: int | None, what: str) -> None:
    if size is not None and reader.offset - start != size:
        raise NatNetProtocolError(
            f"{reader.where}: {what} declared {size} bytes but its content took {reader.offset - start}"
        )


def _skip_channels(reader: _Reader, what: str) -> None:
    for _ in range(reader.count(f"{what} channel count", 4)):
        frames = reader.count(f"{what} channel frame count", 4)
        reader.take(4 * frames, f"{what} channel values")


def _parse_rigid_body(reader: _Reader) -> RigidBodySample:
    rid, px, py, pz, qx, qy, qz, qw, err, params = reader.unpack(_RIGID_BODY, "rigid body")
    return RigidBodySample(rid, (px, py, pz), (qx, qy, qz, qw), err, bool(params & 0x01))


def parse_frame_of_data(payload: bytes, version: Version) -> FrameOfData:
    """Decodes a FRAME_OF_DATA payload sent by a server speaking ``version``.

    Raises:
        NatNetVersionError: unsupported version.
        NatNetTruncatedError: the payload ends inside a section.
        NatNetProtocolError: a section's declared size disagrees with its content.
    """
    check_version(version)
    r = _Reader(payload, "FRAME_OF_DATA")
    frame_number = r.i32("frame number")

    n = r.count("marker set count", 5)
    size = _section_size(r, version, "marker sets")
    start = r.offset
    for _ in range(n):
        r.cstring("marker set name")
        r.take(12 * r.count("marker count", 12), "marker positions")
    _check_section(r, start, size, "marker sets")

    n = r.count("legacy marker count", 12)
    size = _section_size(r, version, "legacy markers")
    start = r.offset
    r.take(12 * n, "legacy markers")
    _check_section(r, start, size, "legacy markers")

    n = r.count("rigid body count", _RIGID_BODY.size)
    size = _section_size(r, version, "rigid bodies")
    start = r.offset
    bodies = tuple(_parse_rigid_body(r) for _ in range(n))
    _check_section(r, start, size, "rigid bodies")

    n = r.count("skeleton count", 8)
    size = _section_size(r, version, "skeletons")
    start = r.offset
    for _ in range(n):
        r.i32("skeleton id")
        r.take(_RIGID_BODY.size * r.count("skeleton bone count", _RIGID_BODY.size), "skeleton bones")
    _check_section(r, start, size, "skeletons")

    if has_section_sizes(version):
        n = r.count("asset count", 12)
        size = _section_size(r, version, "assets")
        start = r.offset
        for _ in range(n):
            r.i32("asset id")
            r.take(_RIGID_BODY.size * r.count("asset rigid body count", _RIGID_BODY.size), "asset rigid bodies")
            r.take(_LABELED_MARKER.size * r.count("asset marker count", _LABELED_MARKER.size), "asset markers")
        _check_section(r, start, size, "assets")

    n = r.count("labeled marker count", _LABELED_MARKER.size)
    size = _section_size(r, version, "labeled markers")
    start = r.offset
    markers = []
    for _ in range(n):
        mid, x, y, z, msize, params, residual = r.unpack(_LABELED_MARKER, "labeled marker")
        markers.append(LabeledMarker(mid, (x, y, z), msize, params, residual))
    _check_section(r, start, size, "labeled markers")

    for what in ("force plate", "device"):
        n = r.count(f"{what} count", 8)
        size = _section_size(r, version, f"{what}s")
        start = r.offset
        for _ in range(n):
            r.i32(f"{what} id")
            _skip_channels(r, what)
        _check_section(r, start, size, f"{what}s")

    timecode, timecode_sub, timestamp, mid_exposure, received, transmit = r.unpack(_SUFFIX_30, "frame suffix")
    precision_s = precision_frac = 0
    if has_section_sizes(version):
        precision_s, precision_frac = r.unpack(_PRECISION, "precision timestamp")
    params = struct.unpack("<h", r.take(2, "frame params"))[0]
    if r.remaining() > _END_OF_DATA.size:
        raise NatNetProtocolError(
            f"FRAME_OF_DATA: {r.remaining()} unread bytes after the frame suffix (layout/version mismatch?)"
        )
    if not np.isfinite(timestamp):
        raise NatNetProtocolError("FRAME_OF_DATA: timestamp is not finite")
    return FrameOfData(
        frame_number=frame_number,
        rigid_bodies=bodies,
        timestamp_s=timestamp,
        stamp_camera_mid_exposure=mid_exposure,
        stamp_data_received=received,
        stamp_transmit=transmit,
        timecode=timecode,
        timecode_sub=timecode_sub,
        precision_timestamp_s=precision_s,
        precision_timestamp_frac=precision_frac,
        is_recording=bool(params & 0x01),
        tracked_models_changed=bool(params & 0x02),
        labeled_markers=tuple(markers),
    )


def _section(count: int, body: bytes, version: Version) -> bytes:
    head = struct.pack("<i", count)
    if has_section_sizes(version):
        head += struct.pack("<i", len(body))
    return head + body


def build_frame_of_data(frame: FrameOfData, version: Version, marker_sets: dict[str, list] | None = None) -> bytes:
    """Encodes ``frame`` as a complete FRAME_OF_DATA packet in ``version``'s layout.

    Args:
        frame: The frame content.
        version: NatNet version of the layout to write.
        marker_sets: Optional named marker sets ({name: [(x, y, z), ...]}).
    """
    check_version(version)
    sets = marker_sets or {}
    set_body = b"".join(
        name.encode("utf-8") + b"\0" + struct.pack("<i", len(pts)) + b"".join(struct.pack("<3f", *p) for p in pts)
        for name, pts in sets.items()
    )
    bodies = b"".join(
        _RIGID_BODY.pack(b.id, *b.position, *b.orientation_xyzw, b.mean_error_m, 0x01 if b.tracking_valid else 0)
        for b in frame.rigid_bodies
    )
    markers = b"".join(
        _LABELED_MARKER.pack(m.id, *m.position, m.size_m, m.params, m.residual_m) for m in frame.labeled_markers
    )
    payload = struct.pack("<i", frame.frame_number)
    payload += _section(len(sets), set_body, version)
    payload += _section(0, b"", version)  # legacy markers
    payload += _section(len(frame.rigid_bodies), bodies, version)
    payload += _section(0, b"", version)  # skeletons
    if has_section_sizes(version):
        payload += _section(0, b"", version)  # assets
    payload += _section(len(frame.labeled_markers), markers, version)
    payload += _section(0, b"", version)  # force plates
    payload += _section(0, b"", version)  # devices
    payload += _SUFFIX_30.pack(
        frame.timecode,
        frame.timecode_sub,
        frame.timestamp_s,
        frame.stamp_camera_mid_exposure,
        frame.stamp_data_received,
        frame.stamp_transmit,
    )
    if has_section_sizes(version):
        payload += _PRECISION.pack(frame.precision_timestamp_s, frame.precision_timestamp_frac)
    params = (0x01 if frame.is_recording else 0) | (0x02 if frame.tracked_models_changed else 0)
    payload += struct.pack("<h", params) + _END_OF_DATA.pack(0)
    return build_packet(MessageId.FRAME_OF_DATA, payload)


def build_model_def(bodies: list[RigidBodyDescription], version: Version) -> bytes:
    """A MODEL_DEF packet holding rigid-body descriptions (no markers)."""
    check_version(version)
    parts = []
    for b in bodies:
        body = b.name.encode("utf-8") + b"\0" + struct.pack("<ii3fi", b.id, b.parent_id, *b.pivot_offset, 0)
        head = struct.pack("<i", _DESCRIPTION_RIGID_BODY)
        if has_section_sizes(version):
            head += struct.pack("<i", len(body))
        parts.append(head + body)
    return build_packet(MessageId.MODEL_DEF, struct.pack("<i", len(bodies)) + b"".join(parts))


def parse_model_def(payload: bytes, version: Version) -> list[RigidBodyDescription]:
    """Rigid-body descriptions of a MODEL_DEF payload.

    Other description kinds are skipped using their declared size, which
    NatNet provides from 4.1; before that, a non-rigid-body description stops
    the scan (the bodies read so far are returned).
    """
    check_version(version)
    r = _Reader(payload, "MODEL_DEF")
    out: list[RigidBodyDescription] = []
    for _ in range(r.count("description count", 4)):
        kind = r.i32("description type")
        size = _section_size(r, version, "description")
        start = r.offset
        if kind != _DESCRIPTION_RIGID_BODY:
            if size is None:
                break
            r.take(size, "skipped description")
            continue
        name = r.cstring("rigid body name")
        rid, parent, ox, oy, oz = r.unpack(struct.Struct("<ii3f"), "rigid body description")
        n_markers = r.count("rigid body marker count", 16)
        r.take(16 * n_markers, "rigid body markers")
        if version[0] >= 4:
            for _ in range(n_markers):
                r.cstring("rigid body marker name")
        if size is not None and r.offset - start != size:
            r.offset = start
            r.take(size, "rigid body description")
        out.append(RigidBodyDescription(name, rid, parent, (ox, oy, oz)))
    return out
