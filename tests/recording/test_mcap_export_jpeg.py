"""A run recorded with JPEG camera frames exports them as foxglove.CompressedImage
with the recorded bytes unchanged (nothing decoded or re-encoded), beside the
camera's calibration; a recorded frame that is no whole JPEG is left out and said."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from teledora.fakes.mjpeg_camera import FakeMjpegCamera
from teledora.operators.contract.messages import image_metadata
from teledora.recording import RunReader, RunWriter
from teledora.recording.mcap_export import export_mcap
from tests.recording.test_mcap_export import MS, T0, read_back


def test_jpeg_frames_become_compressed_images_with_the_recorded_bytes(tmp_path):
    fake = FakeMjpegCamera(160, 120, textured=True)
    w = RunWriter(tmp_path / "run", {"dataflow_path": "sim.yml"}, start_ns=T0 - 5 * MS)
    sent = []
    for i in range(6):
        data = fake.jpeg(i) if i != 3 else fake.jpeg(i)[:-50]  # frame 3 arrived cut short
        meta = image_metadata(width=160, height=120, encoding="jpeg", camera="chest", stamp_ns=T0 + i * 33 * MS,
                              fx=100.0, fy=100.0, cx=79.5, cy=59.5)
        w.append("cameras__chest", pa.array(np.frombuffer(data, np.uint8)), meta, recv_ns=T0 + i * 33 * MS + 7)
        sent.append(data)
    w.close(T0 + 300 * MS)
    skipped: list[str] = []
    export_mcap(RunReader(tmp_path / "run"), tmp_path / "run.mcap", skipped=skipped)
    channels = read_back(tmp_path / "run.mcap")

    frames = channels["/foxglove/cameras/chest"]
    assert {row[0] for row in frames} == {"foxglove.CompressedImage"}
    assert [row[2].data for row in frames] == [d for i, d in enumerate(sent) if i != 3]
    assert all(row[2].format == "jpeg" and row[2].frame_id == "chest" for row in frames)
    assert "/cameras/chest" not in channels  # no second copy of the same bytes
    calib = channels["/foxglove/cameras/chest/calib"]
    assert calib[0][0] == "foxglove.CameraCalibration" and (calib[0][2].width, calib[0][2].height) == (160, 120)
    assert len(skipped) == 1 and "cut short" in skipped[0]
