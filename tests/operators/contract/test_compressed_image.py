"""JPEG camera frames: the header check, the one decode path, and what is refused."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

from teledora.operators.contract import messages as m
from teledora.operators.contract.compressed_image import (
    JpegError,
    decode_jpeg,
    encode_jpeg,
    jpeg_problem,
    jpeg_size,
)


def scene(width: int = 64, height: int = 48) -> np.ndarray:
    """A smooth picture with an edge, like a render: gradients and a dark box."""
    y, x = np.mgrid[0:height, 0:width]
    img = np.stack([x * 255 // max(width - 1, 1), y * 255 // max(height - 1, 1), np.full_like(x, 90)], -1)
    img[height // 4: height // 2, width // 4: width // 2] = (20, 30, 40)
    return img.astype(np.uint8)


def meta(width: int, height: int, encoding: str = "jpeg") -> dict:
    return m.image_metadata(width=width, height=height, encoding=encoding, camera="chest", stamp_ns=5,
                            fx=50, fy=50, cx=32, cy=24)


JPEG = encode_jpeg(scene()).tobytes()


def test_a_jpeg_frame_decodes_through_decode_image_to_its_pixels_within_jpeg_error():
    img = scene()
    out = m.decode_image(pa.array(np.frombuffer(JPEG, np.uint8)), meta(64, 48))
    assert out.shape == (48, 64, 3) and out.dtype == np.uint8
    err = np.abs(out.astype(int) - img.astype(int))
    assert err.mean() < 3 and np.percentile(err, 99) < 25
    assert len(JPEG) < img.nbytes  # compressed, not pixels in disguise


def test_the_size_comes_from_the_header_without_decoding():
    assert jpeg_size(JPEG) == (64, 48)
    assert jpeg_size(encode_jpeg(scene(640, 480))) == (640, 480)


def test_a_header_that_disagrees_with_the_metadata_is_refused_by_name():
    with pytest.raises(m.MessageError, match="header says 64x48, metadata says 48x64") as exc:
        m.decode_image(pa.array(np.frombuffer(JPEG, np.uint8)), meta(48, 64))
    assert exc.value.reason == "bad_image"


@pytest.mark.parametrize("data, why", [
    (b"", "not a JPEG"),
    (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "not a JPEG"),
    (JPEG[:2] + b"\x00" * 40, "corrupt JPEG header"),
    (JPEG[:300], "cut short"),
    (JPEG[:-2], "cut short"),
])
def test_bytes_that_are_no_whole_jpeg_are_refused_with_a_reason(data, why):
    assert why in jpeg_problem(data, 64, 48)
    with pytest.raises(m.MessageError, match=why):
        m.decode_image(pa.array(np.frombuffer(data, np.uint8), pa.uint8()), meta(64, 48))
    with pytest.raises(JpegError):
        decode_jpeg(data, 64, 48)


def test_jpeg_bytes_must_be_uint8_without_nulls_and_jpeg_is_a_known_encoding():
    with pytest.raises(m.MessageError, match="uint8"):
        m.decode_image(pa.array(np.frombuffer(JPEG, np.uint8).astype(np.int16)), meta(64, 48))
    with_null = pa.array(list(JPEG[:-1]) + [None], pa.uint8())
    with pytest.raises(m.MessageError, match="nulls"):
        m.decode_image(with_null, meta(64, 48))
    assert meta(64, 48)["encoding"] == "jpeg"


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=0, max_value=len(JPEG) - 1))
def test_every_frame_cut_short_is_refused_and_the_whole_frame_passes(cut):
    assert jpeg_problem(JPEG, 64, 48) == ""
    assert jpeg_problem(JPEG[:cut], 64, 48) != ""


@settings(max_examples=25, deadline=None)
@given(width=st.integers(1, 80), height=st.integers(1, 60), quality=st.integers(5, 100))
def test_any_size_and_quality_round_trips_with_the_header_size(width, height, quality):
    img = scene(width, height)
    data = encode_jpeg(img, quality)
    assert jpeg_size(data) == (width, height)
    assert decode_jpeg(data, width, height).shape == (height, width, 3)
