"""MODEL_DEF per NatNet version, against byte layouts written out field by field here.

The reference layout of a rigid-body description, per the NatNet SDK's
description unpacking (all little-endian):

    name\\0, i32 id, i32 parent id, 3 x f32 pivot offset,
    [4.2+: 4 x f32 pivot rotation x y z w],
    i32 marker count n, n x (3 x f32) marker offsets, n x i32 active labels,
    [4.0+: n marker names\\0]

Each description is preceded by its i32 type and, from 4.1, its i32 byte
size. A marker set is name\\0, i32 n, n names\\0. The encoder below is written
from that table and does not use the module under test, so a layout mistake
in the parser cannot cancel against the same mistake in a shared builder.
"""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teledora.operators.mocap import natnet_model_def as md
from teledora.operators.mocap import natnet_protocol as nn

V30, V31, V40, V41, V42 = (3, 0, 0, 0), (3, 1, 0, 0), (4, 0, 0, 0), (4, 1, 0, 0), (4, 2, 0, 0)
VERSIONS = [V30, V31, V40, V41, V42]

# a rotated pivot with every quaternion component non-zero (a 4.1 reading takes x as a marker count)
ROTATED = (0.2, 0.5, 0.1, math.sqrt(0.7))


def _wire_rigid_body(version, name, rid, parent, offset, rotation, markers) -> bytes:
    """Reference bytes of one rigid-body description body (without type / size)."""
    major, minor = version[:2]
    out = name.encode() + b"\0" + struct.pack("<i", rid) + struct.pack("<i", parent) + struct.pack("<fff", *offset)
    if (major, minor) >= (4, 2):
        out += struct.pack("<ffff", *rotation)
    out += struct.pack("<i", len(markers))
    for off, _label, _name in markers:
        out += struct.pack("<fff", *off)
    for _off, label, _name in markers:
        out += struct.pack("<i", label)
    if major >= 4:
        for _off, _label, marker_name in markers:
            out += marker_name.encode() + b"\0"
    return out


def _wire_marker_set(name, marker_names) -> bytes:
    return name.encode() + b"\0" + struct.pack("<i", len(marker_names)) + b"".join(
        m.encode() + b"\0" for m in marker_names)


def _wire_model_def(version, descriptions) -> bytes:
    """Reference MODEL_DEF payload from (type, body bytes) pairs."""
    out = struct.pack("<i", len(descriptions))
    for kind, body in descriptions:
        out += struct.pack("<i", kind)
        if tuple(version[:2]) >= (4, 1):
            out += struct.pack("<i", len(body))
        out += body
    return out


MARKERS = [((0.05, 0.0, 0.0), 101, "m1"), ((0.0, 0.05, 0.0), 102, "m2"), ((0.0, 0.0, 0.08), 103, "m3")]


def _motive_like(version) -> bytes:
    """What Motive sends: a marker set per asset first, then the rigid bodies (rotated pivots)."""
    return _wire_model_def(version, [
        (0, _wire_marker_set("cart", ["m1", "m2"])),
        (0, _wire_marker_set("alohamini2", ["m1", "m2", "m3"])),
        (1, _wire_rigid_body(version, "cart", 2, -1, (0.0, 0.1, 0.0), (0.0, 0.0, 0.0, 1.0), MARKERS[:2])),
        (1, _wire_rigid_body(version, "alohamini2", 3, -1, (0.01, 1.1, -0.02), ROTATED, MARKERS)),
    ])


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"{v[0]}.{v[1]}")
def test_motive_model_def_resolves_every_body(version):
    bodies = md.parse_model_def(_motive_like(version), version)
    assert [(b.name, b.id, b.parent_id) for b in bodies] == [("cart", 2, -1), ("alohamini2", 3, -1)]
    robot = bodies[1]
    assert robot.pivot_offset == pytest.approx((0.01, 1.1, -0.02))
    assert [m.offset for m in robot.markers] == [pytest.approx(o) for o, _, _ in MARKERS]
    assert [m.active_label for m in robot.markers] == [101, 102, 103]
    if version >= V42:
        assert robot.pivot_rotation == pytest.approx(ROTATED)
    else:  # the pivot rotation is not on the wire before 4.2
        assert robot.pivot_rotation == (0.0, 0.0, 0.0, 1.0)
    assert [m.name for m in robot.markers] == (["m1", "m2", "m3"] if version >= V40 else ["", "", ""])


def test_42_rotated_pivot_golden_bytes():
    """One 4.2 description written out byte by byte: the quaternion sits between offset and marker count."""
    body = (b"rb\0" + bytes.fromhex("07000000" "ffffffff") + struct.pack("<3f", 0.0, 0.5, 0.0)
            + struct.pack("<4f", 0.0, 0.0, 0.6, 0.8) + bytes.fromhex("01000000") + struct.pack("<3f", 0.1, 0.0, 0.0)
            + bytes.fromhex("2a000000") + b"a\0")
    payload = bytes.fromhex("01000000" "01000000") + struct.pack("<i", len(body)) + body
    (rb,) = md.parse_model_def(payload, V42)
    assert (rb.name, rb.id, rb.parent_id) == ("rb", 7, -1)
    assert rb.pivot_rotation == pytest.approx((0.0, 0.0, 0.6, 0.8))
    (marker,) = rb.markers
    assert (marker.offset, marker.active_label, marker.name) == (pytest.approx((0.1, 0.0, 0.0)), 42, "a")
    # the same bytes read with the 4.1 layout take the quaternion's x as the marker count:
    # the description then does not fill its declared size and is rejected, not misread
    with pytest.raises(nn.NatNetProtocolError):
        md.parse_model_def(payload, V41)


@pytest.mark.parametrize("version", VERSIONS, ids=lambda v: f"{v[0]}.{v[1]}")
def test_builder_matches_reference_layout(version):
    """The fake Motive's encoder writes exactly the reference bytes."""
    bodies = [md.RigidBodyDescription("alohamini2", 3, -1, (0.01, 1.1, -0.02), ROTATED,
                                      tuple(md.RigidBodyMarker(o, lab, n) for o, lab, n in MARKERS))]
    sets = [md.MarkerSetDescription("alohamini2", ("m1", "m2", "m3"))]
    built = nn.split_packet(md.build_model_def(bodies, version, sets)).payload
    marker_names = MARKERS if version >= V40 else [(o, lab, "") for o, lab, _ in MARKERS]
    expected = _wire_model_def(version, [
        (0, _wire_marker_set("alohamini2", ["m1", "m2", "m3"])),
        (1, _wire_rigid_body(version, "alohamini2", 3, -1, (0.01, 1.1, -0.02), ROTATED, marker_names)),
    ])
    assert built == expected


def test_41_skips_unknown_descriptions_by_size_and_40_stops_at_them():
    camera = b"cam\0" + struct.pack("<3f4f", 0, 0, 0, 0, 0, 0, 1)
    rb = _wire_rigid_body(V41, "rb", 5, -1, (0, 0, 0), (0, 0, 0, 1), [])
    assert [b.name for b in md.parse_model_def(_wire_model_def(V41, [(5, camera), (1, rb)]), V41)] == ["rb"]
    rb40 = _wire_rigid_body(V40, "rb", 5, -1, (0, 0, 0), (0, 0, 0, 1), [])
    assert md.parse_model_def(_wire_model_def(V40, [(1, rb40), (5, camera), (1, rb40)]), V40)[0].name == "rb"
    assert len(md.parse_model_def(_wire_model_def(V40, [(1, rb40), (5, camera), (1, rb40)]), V40)) == 1


def test_skeleton_bones_are_walked_before_41():
    bone = _wire_rigid_body(V40, "hip", 1, -1, (0, 0.9, 0), (0, 0, 0, 1), MARKERS[:1])
    skeleton = b"walker\0" + struct.pack("<ii", 4, 2) + bone + bone
    rb = _wire_rigid_body(V40, "alohamini2", 3, -1, (0, 0, 0), (0, 0, 0, 1), [])
    bodies = md.parse_model_def(_wire_model_def(V40, [(2, skeleton), (1, rb)]), V40)
    assert [b.name for b in bodies] == ["alohamini2"]


def test_newer_minor_may_append_fields_but_known_versions_must_fill_their_size():
    rb = _wire_rigid_body(V42, "rb", 5, -1, (0, 0, 0), ROTATED, []) + b"\x00" * 8  # 8 unknown trailing bytes
    v43 = (4, 3, 0, 0)
    assert md.parse_model_def(_wire_model_def(v43, [(1, rb), (1, rb)]), v43)[1].name == "rb"
    with pytest.raises(nn.NatNetProtocolError, match="declared"):
        md.parse_model_def(_wire_model_def(V42, [(1, rb)]), V42)


# -- property-based ------------------------------------------------------------------------------

_names = st.text(st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)), max_size=12)
_floats = st.floats(-10.0, 10.0, width=32)
_markers = st.lists(st.tuples(st.tuples(_floats, _floats, _floats), st.integers(-2**31, 2**31 - 1), _names),
                    max_size=5)
_bodies = st.lists(st.tuples(_names, st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1),
                             st.tuples(_floats, _floats, _floats), st.tuples(_floats, _floats, _floats, _floats),
                             _markers), max_size=4)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(version=st.sampled_from(VERSIONS), bodies=_bodies, sets=st.lists(st.tuples(_names, st.lists(_names, max_size=4)),
                                                                        max_size=3))
def test_any_reference_model_def_parses_exactly(version, bodies, sets):
    descriptions = [(0, _wire_marker_set(n, m)) for n, m in sets]
    descriptions += [(1, _wire_rigid_body(version, *b)) for b in bodies]
    got = md.parse_model_def(_wire_model_def(version, descriptions), version)
    assert len(got) == len(bodies)
    for rb, (name, rid, parent, offset, rotation, markers) in zip(got, bodies):
        assert (rb.name, rb.id, rb.parent_id, rb.pivot_offset) == (name, rid, parent, offset)
        assert rb.pivot_rotation == (rotation if version >= V42 else (0.0, 0.0, 0.0, 1.0))
        assert [(m.offset, m.active_label) for m in rb.markers] == [(o, lab) for o, lab, _ in markers]
        assert [m.name for m in rb.markers] == [n if version >= V40 else "" for _, _, n in markers]


@settings(max_examples=1500, deadline=None)
@given(version=st.sampled_from(VERSIONS), data=st.binary(max_size=400))
def test_any_bytes_parse_or_raise_the_protocol_error(version, data):
    try:
        bodies = md.parse_model_def(data, version)
    except nn.NatNetProtocolError:
        return
    assert all(isinstance(b, md.RigidBodyDescription) for b in bodies)


@settings(max_examples=500, deadline=None)
@given(version=st.sampled_from(VERSIONS), cut=st.integers(0, 400), flips=st.lists(st.tuples(st.integers(0, 400),
                                                                                           st.integers(1, 255)),
                                                                                 max_size=4))
def test_damaged_motive_model_def_parses_or_raises_the_protocol_error(version, cut, flips):
    data = bytearray(_motive_like(version))
    for pos, mask in flips:
        if pos < len(data):
            data[pos] ^= mask
    try:
        md.parse_model_def(bytes(data[: len(data) - cut]), version)
    except nn.NatNetProtocolError:
        pass
