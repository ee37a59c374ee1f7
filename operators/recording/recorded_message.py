"""How one dora message becomes a recorded row, and back.

Pure helpers shared by the recorder, the replayer and the inspection tools:
dora's metadata ``timestamp`` in ns, a message's own ``stamp_ns``, metadata as
JSON and back, and a byte-level digest for comparing a replay with a run.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from typing import Any, Mapping

import pyarrow as pa
import pyarrow.ipc as ipc

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1  # the stamp column's range: a stamp beyond it reads as none


def dora_timestamp_ns(metadata: Mapping[str, Any]) -> int | None:
    """The dora metadata ``timestamp`` in ns since the epoch (None if absent).

    dora hands it to Python as a timezone-aware ``datetime`` (µs resolution).
    """
    ts = metadata.get("timestamp")
    if isinstance(ts, _dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=_dt.timezone.utc)
        return ((ts - _EPOCH) // _dt.timedelta(microseconds=1)) * 1000
    if isinstance(ts, int) and not isinstance(ts, bool):
        return ts
    return None


def message_stamp_ns(value: pa.Array, metadata: Mapping[str, Any]) -> int | None:
    """The message's own ``stamp_ns``: the struct field of a contract message,
    else a ``stamp_ns`` metadata entry (images), else None (also for a stamp
    that does not fit int64)."""
    if pa.types.is_struct(value.type) and len(value) >= 1:
        idx = value.type.get_field_index("stamp_ns")
        if idx >= 0 and pa.types.is_integer(value.type.field(idx).type):
            stamp = value.field(idx)[0].as_py()
            if stamp is not None:
                return int(stamp) if _INT64_MIN <= stamp <= _INT64_MAX else None
    stamp = metadata.get("stamp_ns")
    if isinstance(stamp, int) and not isinstance(stamp, bool) and _INT64_MIN <= stamp <= _INT64_MAX:
        return stamp
    return None


def json_default(obj: Any) -> Any:
    """``json.dumps`` fallback for metadata values: datetimes, bytes, numpy."""
    if isinstance(obj, _dt.datetime):
        return obj.isoformat()
    if isinstance(obj, bytes):
        return obj.hex()
    if hasattr(obj, "tolist"):
        return obj.tolist()
    return str(obj)


def metadata_json(metadata: Mapping[str, Any]) -> str:
    """The dora metadata as JSON (datetimes as ISO 8601 strings)."""
    meta = dict(metadata)
    ts = meta.get("timestamp")
    if isinstance(ts, _dt.datetime):
        meta["timestamp"] = ts.isoformat()
    try:
        return json.dumps(meta, sort_keys=True)
    except (TypeError, ValueError):
        return json.dumps(meta, sort_keys=True, default=json_default)


def replay_metadata(metadata_text: str) -> dict[str, Any]:
    """The metadata to send again on replay: the recorded one without dora's
    own ``timestamp`` (dora stamps the new send)."""
    meta = json.loads(metadata_text) if metadata_text else {}
    meta.pop("timestamp", None)
    return {k: v for k, v in meta.items() if v is not None and not isinstance(v, dict)}


def value_digest(value: pa.Array) -> str:
    """SHA-256 of a value's Arrow type and canonical IPC bytes (byte equality)."""
    compact = pa.concat_arrays([value])  # fresh buffers: slices digest like copies
    sink = pa.BufferOutputStream()
    batch = pa.RecordBatch.from_arrays([compact], names=["value"])
    with ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()
