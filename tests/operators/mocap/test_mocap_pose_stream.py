"""NatNet datagrams → MocapPose dicts: selection, invalid tracking, gaps, clock, rejection."""

from __future__ import annotations

import math

import numpy as np
import pytest

from teledora.operators.mocap import natnet_frame as nf
from teledora.operators.mocap import natnet_model_def as md
from teledora.operators.mocap import natnet_protocol as nn
from teledora.operators.contract.messages import encode
from teledora.models.config_files import load_mocap_config
from teledora.operators.mocap.mocap_frames import MocapFrameTransform
from teledora.operators.mocap.mocap_pose_stream import MocapPoseStream, MocapStreamError, RigidBodySelector

V41 = (4, 1, 0, 0)
FREQ = 10_000_000
OFFSET_NS = 1_000_000_000_000
FRAME = load_mocap_config().frame


def server_info(version=V41) -> bytes:
    return nn.build_server_info(nn.ServerInfo("Motive", (3, 1, 0, 0), version, FREQ, 1511, False, "0.0.0.0"))


def frame(number: int, valid: bool = True, body_id: int = 3, exposure_ns: int = 0, version=V41) -> bytes:
    ticks = exposure_ns * FREQ // 1_000_000_000
    body = nf.RigidBodySample(body_id, (1.0, 0.2, -2.0), (0.0, 0.0, 0.0, 1.0) if valid else (0.0, 0.0, 0.0, 0.0),
                              0.0003, valid)
    return nf.build_frame_of_data(
        nf.FrameOfData(number, (body,), stamp_camera_mid_exposure=ticks, stamp_transmit=ticks + 40_000), version
    )


def stream(**sel) -> MocapPoseStream:
    s = MocapPoseStream(RigidBodySelector(**(sel or {"id": 3})), MocapFrameTransform(FRAME), "world_test")
    s.handle(server_info(), 0)
    return s


def test_valid_pose_in_world_frame_and_contract():
    s = stream()
    (pose,) = s.handle(frame(10), 5).poses
    assert pose["tracking_valid"] is True and pose["frame_id"] == "world_test"
    assert pose["position"] == pytest.approx([1.0, 2.0, 0.2])  # Motive y-up → z-up
    assert pose["orientation"] == pytest.approx([0, 0, 0, 1])
    assert pose["mean_error_m"] == pytest.approx(0.0003)
    assert pose["frame_number"] == 10
    encode("MocapPose", pose)  # satisfies the message contract


def test_invalid_tracking_is_published_as_invalid_not_stale():
    s = stream()
    s.handle(frame(1), 0)
    (pose,) = s.handle(frame(2, valid=False), 0).poses
    assert pose["tracking_valid"] is False
    assert all(math.isnan(v) for v in pose["position"] + pose["orientation"])
    encode("MocapPose", pose)
    (missing,) = s.handle(frame(3, body_id=99), 0).poses
    assert missing["tracking_valid"] is False
    assert s.counters.poses_invalid == 2 and s.counters.body_missing == 1


def test_frame_gaps_counted_and_stale_frames_rejected():
    s = stream()
    for n in (1, 2, 5, 6, 10):
        s.handle(frame(n), 0)
    assert s.counters.dropped_frames == 2 + 3
    with pytest.raises(MocapStreamError, match="stale"):
        s.handle(frame(9), 0)
    assert s.counters.stale_frames == 1


def test_stamp_from_mid_exposure_and_echo():
    s = stream()
    exposure = 2_000_000_000
    s.handle(nn.build_echo_response(OFFSET_NS + exposure - 100_000, exposure * FREQ // 10**9), OFFSET_NS + exposure + 100_000)
    (pose,) = s.handle(frame(1, exposure_ns=exposure + 8_000_000), OFFSET_NS + exposure + 20_000_000).poses
    assert pose["stamp_ns"] == OFFSET_NS + exposure + 8_000_000
    st = s.status()
    assert (st["clock_offset_ns"], st["clock_source"]) == (OFFSET_NS, "echo")


def test_stamp_from_transmit_when_no_echo():
    s = stream()
    exposure = 3_000_000_000
    arrival = OFFSET_NS + exposure + 4_000_000 + 500_000  # transmit 4 ms after exposure, 0.5 ms network
    (pose,) = s.handle(frame(1, exposure_ns=exposure), arrival).poses
    assert pose["stamp_ns"] == OFFSET_NS + exposure + 500_000  # late by the one-way delay only


def test_select_by_name_via_model_def():
    s = stream(name="alohamini2")
    assert s.handle(frame(1, body_id=7), 0).poses == []  # unresolved: nothing published
    notes = s.handle(md.build_model_def([md.RigidBodyDescription("cart", 2), md.RigidBodyDescription("alohamini2", 7)],
                                        V41), 0).notices
    assert "id 7" in notes[0]
    (pose,) = s.handle(frame(2, body_id=7), 0).poses
    assert pose["rigid_body_id"] == 7 and pose["name"] == "alohamini2"


def test_version_mismatch_rejects_frames_with_clear_reason():
    s = MocapPoseStream(RigidBodySelector(id=3), MocapFrameTransform(FRAME), "world_test")
    with pytest.raises(MocapStreamError, match="SERVER_INFO"):
        s.handle(frame(1), 0)
    notes = s.handle(server_info((2, 10, 0, 0)), 0).notices
    assert "not supported" in notes[0]
    with pytest.raises(nn.NatNetVersionError):
        s.handle(frame(1), 0)
    assert s.status()["version_error"]


@pytest.mark.parametrize("mutate", ["truncate", "flip", "garbage", "unknown"])
def test_corrupted_packets_raise_protocol_errors(mutate):
    s = stream()
    data = bytearray(frame(1))
    if mutate == "truncate":
        data = data[: len(data) // 2]
    elif mutate == "flip":
        data[4 + 20] ^= 0x7F  # rigid body count
    elif mutate == "garbage":
        data = bytearray(np.random.default_rng(1).integers(0, 256, 64, dtype=np.uint8).tobytes())
        data[0:2] = b"\x07\x00"
    else:
        data = bytearray(nn.build_packet(77, b"x"))
    with pytest.raises(nn.NatNetProtocolError):
        s.handle(bytes(data), 0)
    assert s.last_frame_number is None


def test_selector_needs_id_or_name():
    with pytest.raises(ValueError):
        RigidBodySelector()
