"""The recorder stores camera JPEG frames as they came (same bytes, nothing
re-encoded) and refuses, counts and names frames that are no whole JPEG of
the size their metadata says."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pyarrow as pa
import pytest
from dora.testing import MockNode

from teledora.fakes.mjpeg_camera import FakeMjpegCamera
from teledora.nodes.recording import recorder
from teledora.operators.contract.messages import decode, image_metadata
from teledora.recording import RunReader
from tests.nodes.recording.test_recorder import StepClock


def frame_event(data: bytes, width: int = 160, height: int = 120, seq: int = 0) -> dict:
    meta = image_metadata(width=width, height=height, encoding="jpeg", camera="chest", stamp_ns=5 + seq,
                          fx=100, fy=100, cx=80, cy=60)
    return {"type": "INPUT", "id": "cameras__chest", "value": pa.array(np.frombuffer(data, np.uint8)),
            "metadata": dict(meta, seq=seq)}


def test_jpeg_frames_are_stored_byte_for_byte(tmp_path):
    fake = FakeMjpegCamera(160, 120, textured=True)  # a camera's JPEGs; no server needed
    sent = [fake.jpeg(n) for n in range(12)]
    node = MockNode([frame_event(data, seq=i) for i, data in enumerate(sent)])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    stored = list(RunReader(run).iter_topic("cameras__chest"))
    assert [hashlib.sha256(m.value.to_numpy().tobytes()).hexdigest() for m in stored] == \
        [hashlib.sha256(d).hexdigest() for d in sent]
    assert all(json.loads(m.metadata)["encoding"] == "jpeg" for m in stored)


@pytest.mark.parametrize("what, data, width", [
    ("cut short", FakeMjpegCamera(160, 120).jpeg(3)[:-40], 160),
    ("header says 160x120, metadata says 320x120", FakeMjpegCamera(160, 120).jpeg(3), 320),
    ("not a JPEG", bytes(160 * 120 * 3), 160),
])
def test_a_frame_that_is_no_whole_jpeg_of_its_size_is_refused_counted_and_named(tmp_path, what, data, width):
    good = FakeMjpegCamera(160, 120).jpeg(1)
    node = MockNode([frame_event(good, seq=0), frame_event(data, width=width, seq=1), frame_event(good, seq=2)])
    run = recorder.main(["--run-dir", str(tmp_path / "r")], node=node, clock=StepClock())
    reader = RunReader(run)
    assert [json.loads(m.metadata)["seq"] for m in reader.iter_topic("cameras__chest")] == [0, 2]
    rejected = reader.manifest["rejected"]["cameras__chest"]
    assert rejected["count"] == 1
    last = decode("Diagnostics", node.outputs["diagnostics"][-1])
    assert last["rejected"] == 1 and what in last["last_error"]
