"""NatNet FRAME_OF_DATA: parse and build one frame of motion-capture data.

Layout (NatNet 3.x/4.x, little-endian): i32 frame number; marker sets (name,
points); legacy unlabeled markers; rigid bodies (i32 id, 3×f32 position,
4×f32 quaternion x y z w, f32 mean marker error, i16 params with bit 0 =
tracking valid); skeletons; assets (4.1+); labeled markers; force plates;
devices; then the suffix: u32 SMPTE timecode and subframe, f64 timestamp (s),
u64 camera mid-exposure, data-received and transmit stamps (Motive's
high-resolution clock), u32+u32 precision timestamp (4.1+), i16 params
(bit 0 recording, bit 1 tracked models changed) and an optional i32
end-of-data tag. From 4.1 each section's count is followed by its size in
bytes, which is checked against what was read.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np

from teledora.operators.mocap.natnet_protocol import (
    MessageId,
    NatNetProtocolError,
    PayloadReader,
    Version,
    build_packet,
    check_section_size,
    check_version,
    has_section_sizes,
    read_section_size,
)

_RIGID_BODY = struct.Struct("<i3f4ffh")
_LABELED_MARKER = struct.Struct("<i3ffhf")
_SUFFIX_30 = struct.Struct("<IIdQQQ")
_PRECISION = struct.Struct("<II")
_END_OF_DATA = struct.Struct("<i")  # optional end-of-data tag after the frame params


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



def _skip_channels(reader: PayloadReader, what: str) -> None:
    for _ in range(reader.count(f"{what} channel count", 4)):
        frames = reader.count(f"{what} channel frame count", 4)
        reader.take(4 * frames, f"{what} channel values")


def _parse_rigid_body(reader: PayloadReader) -> RigidBodySample:
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
    r = PayloadReader(payload, "FRAME_OF_DATA")
    frame_number = r.i32("frame number")

    n = r.count("marker set count", 5)
    size = read_section_size(r, version, "marker sets")
    start = r.offset
    for _ in range(n):
        r.cstring("marker set name")
        r.take(12 * r.count("marker count", 12), "marker positions")
    check_section_size(r, start, size, "marker sets")

    n = r.count("legacy marker count", 12)
    size = read_section_size(r, version, "legacy markers")
    start = r.offset
    r.take(12 * n, "legacy markers")
    check_section_size(r, start, size, "legacy markers")

    n = r.count("rigid body count", _RIGID_BODY.size)
    size = read_section_size(r, version, "rigid bodies")
    start = r.offset
    bodies = tuple(_parse_rigid_body(r) for _ in range(n))
    check_section_size(r, start, size, "rigid bodies")

    n = r.count("skeleton count", 8)
    size = read_section_size(r, version, "skeletons")
    start = r.offset
    for _ in range(n):
        r.i32("skeleton id")
        r.take(_RIGID_BODY.size * r.count("skeleton bone count", _RIGID_BODY.size), "skeleton bones")
    check_section_size(r, start, size, "skeletons")

    if has_section_sizes(version):
        n = r.count("asset count", 12)
        size = read_section_size(r, version, "assets")
        start = r.offset
        for _ in range(n):
            r.i32("asset id")
            r.take(_RIGID_BODY.size * r.count("asset rigid body count", _RIGID_BODY.size), "asset rigid bodies")
            r.take(_LABELED_MARKER.size * r.count("asset marker count", _LABELED_MARKER.size), "asset markers")
        check_section_size(r, start, size, "assets")

    n = r.count("labeled marker count", _LABELED_MARKER.size)
    size = read_section_size(r, version, "labeled markers")
    start = r.offset
    markers = []
    for _ in range(n):
        mid, x, y, z, msize, params, residual = r.unpack(_LABELED_MARKER, "labeled marker")
        markers.append(LabeledMarker(mid, (x, y, z), msize, params, residual))
    check_section_size(r, start, size, "labeled markers")

    for what in ("force plate", "device"):
        n = r.count(f"{what} count", 8)
        size = read_section_size(r, version, f"{what}s")
        start = r.offset
        for _ in range(n):
            r.i32(f"{what} id")
            _skip_channels(r, what)
        check_section_size(r, start, size, f"{what}s")

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
