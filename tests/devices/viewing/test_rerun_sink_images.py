"""A JPEG camera frame is logged to Rerun as an EncodedImage holding the frame's
own bytes (Rerun decodes it when it draws), read back from the saved .rrd."""

from __future__ import annotations

import numpy as np
import pytest

rerun = pytest.importorskip("rerun")

from teledora.devices.viewing.rerun_sink import RerunSink  # noqa: E402
from teledora.operators.contract.compressed_image import encode_jpeg  # noqa: E402
from teledora.operators.viewing import view_mapping as vm  # noqa: E402
from tests.commands.test_view import column  # noqa: E402


def test_a_jpeg_frame_is_logged_as_an_encoded_image_with_its_bytes(tmp_path) -> None:
    y, x = np.mgrid[0:24, 0:32]
    data = encode_jpeg(np.stack([x * 8, y * 10, x + y], -1).astype(np.uint8)).tobytes()
    rrd = tmp_path / "v.rrd"
    sink = RerunSink(recording_id="jpeg")
    sink.save(rrd)
    sink.log(1_800_000_000_000_000_000, [vm.EncodedImage("cameras/chest", data, "image/jpeg")])
    sink.close()
    blobs = column(rrd, "/cameras/chest", "EncodedImage:blob")
    media = column(rrd, "/cameras/chest", "EncodedImage:media_type")
    assert len(blobs) == 1 and bytes(blobs[0][0]) == data
    assert media == [["image/jpeg"]]
