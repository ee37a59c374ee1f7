"""What the recorder refuses to store, decided before a message reaches a run.

dora hands a node whatever was sent; a test harness can hand it anything at
all. A message the run could not hold faithfully, or that would make a later
reader fail, is refused here with a reason instead of being written (or of
failing a flush that also carries good rows):

- a value that is no Arrow array (None, any other object); a chunked array
  is joined into one array first (the same values);
- a dictionary-encoded type anywhere in the value: a record batch carries
  no dictionaries, so its rows would not read back;
- metadata that is not a mapping of string keys to dora parameter values
  (bool, int, float, str, a datetime, or a list of those), or whose
  ``timestamp`` / ``stamp_ns`` do not fit an int64 of nanoseconds;
- an image (metadata naming ``width``, ``height`` or ``encoding``) whose
  sizes are not positive integers, whose encoding is unknown, or whose value
  is not ``width * height * channels`` uint8 bytes; for a JPEG frame
  (``encoding: "jpeg"``), bytes that are no whole JPEG of that size (its
  header read, not its pixels: a frame is stored as it came).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

import pyarrow as pa

from teledora.operators.contract.compressed_image import COMPRESSED_ENCODINGS, jpeg_problem
from teledora.operators.contract.messages import ALL_IMAGE_ENCODINGS, IMAGE_ENCODINGS

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
TIMESTAMP_YEARS = (1678, 2261)
IMAGE_KEYS = ("width", "height", "encoding")
_SCALARS = (bool, int, float, str, _dt.datetime)


def _has_dictionary(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return True
    return any(_has_dictionary(t.field(i).type) for i in range(t.num_fields))


def checked_value(value: Any, clean_type: pa.DataType | None = None) -> tuple[pa.Array | None, str]:
    """``(array, "")`` for a value the run can hold, else ``(None, why not)``.
    ``clean_type``: a type already known to hold no dictionary (skips the walk)."""
    if value is None:
        return None, "no value (None)"
    if isinstance(value, pa.ChunkedArray):
        try:
            value = value.combine_chunks()
        except (pa.ArrowException, ValueError) as exc:
            return None, f"chunked array that cannot be joined ({exc})"
    if not isinstance(value, pa.Array):
        return None, f"value is a {type(value).__name__}, not an Arrow array"
    if (clean_type is None or value.type != clean_type) and _has_dictionary(value.type):
        return None, f"dictionary-encoded type {value.type} cannot be recorded (send the decoded values)"
    return value, ""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def metadata_problem(metadata: Any) -> str:
    """Why ``metadata`` cannot be stored with its message ("" when it can)."""
    if not isinstance(metadata, Mapping):
        return f"metadata is a {type(metadata).__name__}, not a mapping"
    for key, v in metadata.items():
        if not isinstance(key, str):
            return f"metadata key {key!r} is not a string"
        if v is None or isinstance(v, _SCALARS):
            continue
        if isinstance(v, (list, tuple)) and all(isinstance(x, _SCALARS) for x in v):
            continue
        return f"metadata {key!r} holds a {type(v).__name__}, not a dora parameter value"
    ts = metadata.get("timestamp")
    # int64 ns spans 1677-09-21 .. 2262-04-11: whole years inside it, without the arithmetic
    if (isinstance(ts, _dt.datetime) and not TIMESTAMP_YEARS[0] <= ts.year <= TIMESTAMP_YEARS[1]) or (
            _is_int(ts) and not INT64_MIN <= ts <= INT64_MAX):
        return "metadata timestamp does not fit int64 nanoseconds"
    stamp = metadata.get("stamp_ns")
    if _is_int(stamp) and not INT64_MIN <= stamp <= INT64_MAX:
        return "metadata stamp_ns does not fit int64"
    return ""


def image_problem(value: pa.Array, metadata: Mapping[str, Any]) -> str:
    """Why a message whose metadata names an image is not a valid image ("" when it is,
    or when the metadata names none of ``width``, ``height``, ``encoding``)."""
    if not any(k in metadata for k in IMAGE_KEYS):
        return ""
    missing = [k for k in IMAGE_KEYS if k not in metadata]
    if missing:
        return f"image metadata lacks {', '.join(missing)}"
    width, height, encoding = metadata["width"], metadata["height"], metadata["encoding"]
    if not (_is_int(width) and _is_int(height)) or width <= 0 or height <= 0:
        return f"image size {width!r} x {height!r} is not two positive integers"
    channels = IMAGE_ENCODINGS.get(encoding) if isinstance(encoding, str) else None
    if channels is None and encoding not in COMPRESSED_ENCODINGS:
        return f"unknown image encoding {encoding!r} (known: {', '.join(sorted(ALL_IMAGE_ENCODINGS))})"
    if value.type != pa.uint8():
        return f"image value is {value.type}, not uint8"
    if channels is None:
        why = jpeg_problem(value, width, height)
        return f"{encoding} image: {why}" if why else ""
    if len(value) != width * height * channels:
        return f"image holds {len(value)} bytes, {width}x{height} {encoding} needs {width * height * channels}"
    return ""


def message_problem(value: Any, metadata: Any, clean_type: pa.DataType | None = None) -> tuple[pa.Array | None, str]:
    """``(array to record, "")``, or ``(None, why the message is refused)``."""
    array, why = checked_value(value, clean_type)
    if array is None:
        return None, why
    why = metadata_problem(metadata) or image_problem(array, metadata)
    return (None, why) if why else (array, "")


class MessageCheck:
    """:func:`message_problem` for a stream of messages: the walk over a
    value's type is done once per topic and type, not per message (it cost
    more than all the other checks together)."""

    def __init__(self) -> None:
        self._clean: dict[str, pa.DataType] = {}

    def __call__(self, topic: str, value: Any, metadata: Any) -> tuple[pa.Array | None, str]:
        array, why = message_problem(value, metadata, self._clean.get(topic))
        if array is not None:
            self._clean[topic] = array.type
        return array, why
