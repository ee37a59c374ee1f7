"""The feed loop offers the headset's page a camera's JPEG frame as the camera's
own bytes (checked whole, not decoded), raw pixels as an RGB array, and counts
a frame that is no whole JPEG of its size instead of offering it."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from dora.testing import MockNode

from teledora.nodes.xr.xr_webxr import run as run_feed
from teledora.operators.contract.compressed_image import encode_jpeg
from teledora.operators.contract.messages import image_metadata
from teledora.operators.xr.camera_view import JpegFrame
from teledora.operators.xr.feed_assembler import FeedAssembler
from teledora.runtime.node_io import NodeIO
from tests.devices.xr.test_feed_loop_display import S, Page


class CameraPage(Page):
    def __init__(self) -> None:
        super().__init__()
        self.offered: list[tuple[str, object, int]] = []

    def offer_image(self, camera, rgb, capture_ns) -> None:
        self.offered.append((camera, rgb, capture_ns))


def frame(data: np.ndarray, width: int = 64, height: int = 48, encoding: str = "jpeg") -> dict:
    meta = image_metadata(width=width, height=height, encoding=encoding, camera="chest", stamp_ns=5 * S,
                          fx=50, fy=50, cx=32, cy=24)
    return {"type": "INPUT", "id": "chest", "value": pa.array(data.reshape(-1)),
            "metadata": dict(meta, capture_ns=5 * S)}


def pixels() -> np.ndarray:
    y, x = np.mgrid[0:48, 0:64]
    return np.stack([x * 4, y * 5, np.full_like(x, 100)], -1).astype(np.uint8)


def run(page: CameraPage, event: dict) -> NodeIO:  # one event per run: the loop offers only the newest of a batch
    io = NodeIO(MockNode([event]), "xr", clock=lambda: 20 * S, ends_with=())
    run_feed(io, page, FeedAssembler("test"))
    return io


def test_a_jpeg_frame_is_offered_as_its_own_bytes_and_a_broken_one_is_counted():
    data = encode_jpeg(pixels())
    page = CameraPage()
    assert run(page, frame(data)).diag.rejected == 0
    ((camera, offered, capture_ns),) = page.offered
    assert camera == "chest" and capture_ns == 5 * S
    assert offered == JpegFrame(data.tobytes(), 64, 48)  # the camera's bytes, not re-encoded
    for broken, why in ((frame(data[:-20]), "cut short"), (frame(data, width=32), "header says 64x48"),
                        (frame(np.frombuffer(b"not a jpeg at all", np.uint8)), "not a JPEG")):
        io = run(page, broken)
        assert io.diag.rejected == 1 and why in io.diag.last_error
        assert io.diag.rejected_by_reason.get("bad_image") == 1 and io.diag.level == "warn"
        assert len(page.offered) == 1  # nothing more offered


def test_a_raw_rgb8_frame_is_offered_as_its_pixels():
    page = CameraPage()
    assert run(page, frame(pixels(), encoding="rgb8")).diag.rejected == 0
    ((_, offered, _),) = page.offered
    assert isinstance(offered, np.ndarray) and np.array_equal(offered, pixels())
