"""The feed loop offers the headset's page a camera's JPEG frame as RGB pixels
(decoded once, through decode_image), and counts a frame that is no whole JPEG
of its size instead of offering it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

from teledora.devices.xr.feed_loop import run_feed
from teledora.operators.contract.compressed_image import encode_jpeg
from teledora.operators.contract.messages import image_metadata
from teledora.operators.xr.feed_assembler import FeedAssembler
from teledora.runtime.node_io import NodeIO
from tests.devices.xr.test_feed_loop_display import S, Page


class CameraPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.offered: list[tuple[str, np.ndarray, int]] = []

    def offer_image(self, camera, rgb, capture_ns) -> None:
        self.offered.append((camera, rgb, capture_ns))


def frame(data: np.ndarray, width: int = 64, height: int = 48) -> dict:
    meta = image_metadata(width=width, height=height, encoding="jpeg", camera="chest", stamp_ns=5 * S,
                          fx=50, fy=50, cx=32, cy=24)
    return {"type": "INPUT", "id": "chest", "value": pa.array(data), "metadata": dict(meta, capture_ns=5 * S)}


def test_a_jpeg_frame_is_offered_as_its_pixels_and_a_broken_one_is_counted():
    y, x = np.mgrid[0:48, 0:64]
    pixels = np.stack([x * 4, y * 5, np.full_like(x, 100)], -1).astype(np.uint8)
    data = encode_jpeg(pixels)
    page = CameraPage()

    def run(event: dict) -> NodeIO:  # one event per run: the loop offers only the newest frame of a batch
        io = NodeIO(MockNode([event]), "xr", clock=lambda: 20 * S, ends_with=())
        run_feed(io, page, FeedAssembler("test"))
        return io

    assert run(frame(data)).diag.rejected == 0
    ((camera, rgb, capture_ns),) = page.offered
    assert camera == "chest" and capture_ns == 5 * S and rgb.shape == (48, 64, 3)
    assert np.abs(rgb.astype(int) - pixels).mean() < 2
    for broken, why in ((frame(data[:-20]), "cut short"), (frame(data, width=32), "header says 64x48")):
        io = run(broken)
        assert io.diag.rejected == 1 and why in io.diag.last_error
        assert len(page.offered) == 1  # nothing more offered
