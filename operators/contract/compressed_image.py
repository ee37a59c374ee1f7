"""Compressed camera frames: one JPEG in a flat ``uint8`` array.

A frame travels as the JPEG file's bytes (a USB camera's own MJPEG frame, or
a render encoded once where it is made), with the image metadata of
:func:`~teledora.operators.contract.messages.image_metadata` and
``encoding: "jpeg"``: the shape of Foxglove's ``CompressedImage`` (bytes and
format), with the size and intrinsics beside them.

* :func:`jpeg_size` reads the frame size from the header without decoding;
* :func:`jpeg_problem` says why bytes are no whole JPEG of a given size
  (cheap enough for every frame a recorder stores);
* :func:`encode_jpeg` and :func:`decode_jpeg` convert to and from RGB
  pixels with OpenCV's libjpeg-turbo.
"""

from __future__ import annotations

import numpy as np

from teledora.operators.errors import TeledoraError

JPEG = "jpeg"
COMPRESSED_ENCODINGS = (JPEG,)
DEFAULT_QUALITY = 90

_SOI, _EOI, _SOS = b"\xff\xd8", b"\xff\xd9", 0xDA
# start-of-frame markers (baseline, progressive, lossless, arithmetic); C4, C8 and CC are other segments
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}
_STANDALONE = {0x01} | set(range(0xD0, 0xD8))


class JpegError(TeledoraError, ValueError):
    """Bytes that are not a whole JPEG file."""


def as_bytes(data: object) -> bytes:
    """The bytes of a flat uint8 array, a NumPy array or a bytes-like object."""
    if isinstance(data, bytes):
        return data
    to_numpy = getattr(data, "to_numpy", None)
    if to_numpy is not None:  # a pyarrow array
        if getattr(data, "null_count", 0):
            raise JpegError("JPEG bytes hold nulls")
        return to_numpy(zero_copy_only=False).tobytes()
    return bytes(memoryview(data))  # type: ignore[arg-type]


def _header(data: bytes) -> tuple[int, int, int]:
    """(width, height, offset of the scan data): walks the marker segments up to the first scan."""
    if len(data) < 4 or not data.startswith(_SOI):
        raise JpegError("not a JPEG (no start-of-image marker)")
    size: tuple[int, int] | None = None
    i, n = 2, len(data)
    while i < n:
        if data[i] != 0xFF:
            raise JpegError(f"corrupt JPEG header (no marker at byte {i})")
        while i < n and data[i] == 0xFF:  # fill bytes
            i += 1
        if i >= n:
            break
        marker = data[i]
        i += 1
        if marker in _STANDALONE:
            continue
        if marker == 0xD9:
            raise JpegError("JPEG ends before its image data")
        if i + 2 > n:
            break
        length = int.from_bytes(data[i:i + 2], "big")
        if length < 2 or i + length > n:
            break
        if marker in _SOF:
            if length < 7:
                raise JpegError("corrupt JPEG frame header")
            height = int.from_bytes(data[i + 3:i + 5], "big")
            width = int.from_bytes(data[i + 5:i + 7], "big")
            size = (width, height)
        elif marker == _SOS:
            if size is None:
                raise JpegError("JPEG has image data before its frame header")
            return size[0], size[1], i + length
        i += length
    raise JpegError("JPEG is cut short in its header")


def jpeg_size(data: object) -> tuple[int, int]:
    """(width, height) of a JPEG, from its frame header (nothing decoded).

    Raises:
        JpegError: the bytes are not a JPEG or the header is cut short."""
    width, height, _ = _header(as_bytes(data))
    return width, height


def jpeg_problem(data: object, width: int, height: int) -> str:
    """Why ``data`` is not a whole ``width`` x ``height`` JPEG ("" when it is).

    Checks the header (start marker, frame size, a scan) and that an
    end-of-image marker follows the scan: the entropy-coded data never holds
    the bytes FF D9 (an FF there is followed by 00), so a frame cut short
    lacks it. The pixels themselves are not decoded."""
    try:
        raw = as_bytes(data)
        w, h, scan = _header(raw)
    except JpegError as exc:
        return str(exc)
    if (w, h) != (width, height):
        return f"JPEG header says {w}x{h}, metadata says {width}x{height}"
    if raw.rfind(_EOI, scan) < 0:
        return "JPEG is cut short (no end-of-image marker after its image data)"
    return ""


def encode_jpeg(rgb: np.ndarray, quality: int = DEFAULT_QUALITY) -> np.ndarray:
    """The JPEG of an (H, W, 3) RGB uint8 image, as a flat uint8 array."""
    import cv2

    if not 1 <= int(quality) <= 100:
        raise ValueError(f"JPEG quality must be 1..100, got {quality}")
    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] != 3:
        raise ValueError(f"encode_jpeg takes an (H, W, 3) uint8 RGB image, got {rgb.dtype} {rgb.shape}")
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV encodes any 8-bit 3-channel image
        raise ValueError("JPEG encoding failed")
    return buf.reshape(-1)


def decode_jpeg(data: object, width: int, height: int) -> np.ndarray:
    """The (H, W, 3) RGB pixels of a ``width`` x ``height`` JPEG.

    Raises:
        JpegError: the bytes are no whole JPEG of that size, or do not decode."""
    import cv2

    raw = as_bytes(data)  # JpegError for nulls
    why = jpeg_problem(raw, width, height)
    if why:
        raise JpegError(why)
    bgr = cv2.imdecode(np.frombuffer(raw, np.uint8), cv2.IMREAD_COLOR)
    if bgr is None:
        raise JpegError("JPEG does not decode")
    if bgr.shape[:2] != (height, width):  # pragma: no cover - the header was checked above
        raise JpegError(f"JPEG decodes to {bgr.shape[1]}x{bgr.shape[0]}, metadata says {width}x{height}")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
