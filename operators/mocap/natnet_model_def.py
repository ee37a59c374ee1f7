"""NatNet MODEL_DEF: the data descriptions Motive sends on REQUEST_MODEL_DEF.

teledora reads the rigid-body descriptions (to resolve a body's name to its
streaming id). The layout of one rigid-body description, per NatNet version
(little-endian, as the NatNet SDK unpacks it):

    name\0, i32 id, i32 parent id, 3 x f32 pivot offset,
    4.2+: 4 x f32 pivot rotation (x, y, z, w),
    i32 marker count n, n x 3 x f32 marker offsets, n x i32 active labels,
    4.0+: n marker names\0

The payload is an i32 description count, then per description an i32 type
(0 marker set, 1 rigid body, 2 skeleton, 3 force plate, 4 device, 5 camera,
6 asset) and, from 4.1, its i32 byte size. A marker set is name\0, i32 n and
n names; a skeleton is name\0, i32 id, i32 n and n rigid-body descriptions.

The pivot rotation is informational: FRAME_OF_DATA already reports the
pivot's pose, rotation included.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from teledora.operators.mocap.natnet_protocol import (
    MessageId,
    NatNetProtocolError,
    PayloadReader,
    Version,
    build_packet,
    check_version,
    has_section_sizes,
    read_section_size,
)

_DESCRIPTION_MARKER_SET = 0
_DESCRIPTION_RIGID_BODY = 1
_DESCRIPTION_SKELETON = 2
_VEC3 = struct.Struct("<3f")
_QUAT = struct.Struct("<4f")
_RIGID_BODY_HEAD = struct.Struct("<ii3f")


@dataclass(frozen=True)
class RigidBodyMarker:
    """One marker of a rigid-body description: offset from the pivot, active label, name (4.0+)."""

    offset: tuple[float, float, float]
    active_label: int = 0
    name: str = ""


@dataclass(frozen=True)
class RigidBodyDescription:
    """A rigid body's definition from MODEL_DEF.

    ``pivot_rotation`` (x, y, z, w) is only on the wire from NatNet 4.2; older
    versions describe an unrotated pivot. Marker names are only on the wire
    from NatNet 4.0.
    """

    name: str
    id: int
    parent_id: int = -1
    pivot_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pivot_rotation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    markers: tuple[RigidBodyMarker, ...] = ()


@dataclass(frozen=True)
class MarkerSetDescription:
    """A marker set's name and marker names, from MODEL_DEF."""

    name: str
    marker_names: tuple[str, ...] = ()


def has_pivot_rotation(version: Version) -> bool:
    """NatNet 4.2 added the pivot rotation (quaternion) after a rigid body's pivot offset."""
    return tuple(version[:2]) >= (4, 2)


def has_marker_names(version: Version) -> bool:
    """NatNet 4.0 added a name per rigid-body marker after the labels."""
    return version[0] >= 4


def _pack_cstring(text: str) -> bytes:
    raw = text.encode("utf-8")
    if b"\0" in raw:
        raise NatNetProtocolError(f"name {text!r} contains a NUL byte")
    return raw + b"\0"


def _pack_rigid_body(b: RigidBodyDescription, version: Version) -> bytes:
    out = [_pack_cstring(b.name), _RIGID_BODY_HEAD.pack(b.id, b.parent_id, *b.pivot_offset)]
    if has_pivot_rotation(version):
        out.append(_QUAT.pack(*b.pivot_rotation))
    out.append(struct.pack("<i", len(b.markers)))
    out += [_VEC3.pack(*m.offset) for m in b.markers]
    out += [struct.pack("<i", m.active_label) for m in b.markers]
    if has_marker_names(version):
        out += [_pack_cstring(m.name) for m in b.markers]
    return b"".join(out)


def _pack_marker_set(m: MarkerSetDescription) -> bytes:
    return _pack_cstring(m.name) + struct.pack("<i", len(m.marker_names)) + b"".join(map(_pack_cstring, m.marker_names))


def build_model_def(
    bodies: list[RigidBodyDescription], version: Version, marker_sets: list[MarkerSetDescription] | None = None
) -> bytes:
    """A MODEL_DEF packet: the marker sets first (as Motive sends them), then the rigid bodies."""
    check_version(version)
    described = [(_DESCRIPTION_MARKER_SET, _pack_marker_set(m)) for m in marker_sets or []]
    described += [(_DESCRIPTION_RIGID_BODY, _pack_rigid_body(b, version)) for b in bodies]
    parts = []
    for kind, body in described:
        head = struct.pack("<i", kind)
        if has_section_sizes(version):
            head += struct.pack("<i", len(body))
        parts.append(head + body)
    return build_packet(MessageId.MODEL_DEF, struct.pack("<i", len(described)) + b"".join(parts))


def _read_rigid_body(r: PayloadReader, version: Version) -> RigidBodyDescription:
    name = r.cstring("rigid body name")
    rid, parent, ox, oy, oz = r.unpack(_RIGID_BODY_HEAD, "rigid body description")
    rotation = r.unpack(_QUAT, "rigid body pivot rotation") if has_pivot_rotation(version) else (0.0, 0.0, 0.0, 1.0)
    n = r.count("rigid body marker count", 16)
    offsets = [r.unpack(_VEC3, "rigid body marker offset") for _ in range(n)]
    labels = [r.i32("rigid body marker label") for _ in range(n)]
    names = [r.cstring("rigid body marker name") for _ in range(n)] if has_marker_names(version) else [""] * n
    markers = tuple(RigidBodyMarker(o, lab, nm) for o, lab, nm in zip(offsets, labels, names))
    return RigidBodyDescription(name, rid, parent, (ox, oy, oz), rotation, markers)  # type: ignore[arg-type]


def _skip_marker_set(r: PayloadReader) -> None:
    r.cstring("marker set name")
    for _ in range(r.count("marker set marker count", 1)):
        r.cstring("marker set marker name")


def _skip_skeleton(r: PayloadReader, version: Version) -> None:
    r.cstring("skeleton name")
    r.i32("skeleton id")
    for _ in range(r.count("skeleton bone count", 1)):
        _read_rigid_body(r, version)


def parse_model_def(payload: bytes, version: Version) -> list[RigidBodyDescription]:
    """Rigid-body descriptions of a MODEL_DEF payload, per the layout of ``version``.

    From 4.1 every description declares its size: kinds other than rigid
    bodies are skipped by it, and a rigid body must fill its size exactly
    (a later 4.x may append fields, which are skipped). Before 4.1 marker
    sets and skeletons are walked field by field; any other kind ends the
    scan (force plates, devices and cameras come after the rigid bodies in
    Motive's order), and the bodies read so far are returned.

    Raises:
        NatNetProtocolError: the payload does not follow the layout.
    """
    check_version(version)
    r = PayloadReader(payload, "MODEL_DEF")
    out: list[RigidBodyDescription] = []
    for _ in range(r.count("description count", 4)):
        kind = r.i32("description type")
        size = read_section_size(r, version, "description")
        start = r.offset
        if kind == _DESCRIPTION_RIGID_BODY:
            out.append(_read_rigid_body(r, version))
        elif size is not None:
            r.take(size, "skipped description")
            continue
        elif kind == _DESCRIPTION_MARKER_SET:
            _skip_marker_set(r)
            continue
        elif kind == _DESCRIPTION_SKELETON:
            _skip_skeleton(r, version)
            continue
        else:
            break
        if size is not None:
            used = r.offset - start
            if used > size or (used < size and tuple(version[:2]) <= (4, 2)):
                raise NatNetProtocolError(
                    f"MODEL_DEF: rigid body {out[-1].name!r} declared {size} bytes but its NatNet "
                    f"{'.'.join(map(str, version[:2]))} layout took {used}"
                )
            r.take(size - used, "newer rigid body fields")
    return out
