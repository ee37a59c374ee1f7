"""Recorded-row helpers: dora timestamps, message stamps, metadata, digests."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pyarrow as pa

from teledora.operators.contract.messages import encode
from teledora.operators.recording.recorded_message import (
    dora_timestamp_ns,
    message_stamp_ns,
    metadata_json,
    replay_metadata,
    value_digest,
)


def lift(i: int) -> pa.StructArray:
    return encode("LiftState", {"stamp_ns": 1000 + i, "height_m": 0.01 * i, "velocity_m_s": 0.0, "homed": True})


def test_field_extraction_helpers():
    assert dora_timestamp_ns({"timestamp": dt.datetime(1970, 1, 1, 0, 0, 1, 5, tzinfo=dt.timezone.utc)}) == 1_000_005_000
    assert dora_timestamp_ns({}) is None
    assert message_stamp_ns(lift(3), {"stamp_ns": 1}) == 1003
    assert message_stamp_ns(pa.array([1, 2]), {}) is None
    assert replay_metadata('{"timestamp": "2026", "width": 4, "camera": "chest"}') == {"width": 4, "camera": "chest"}


def test_digest_is_byte_equality_and_ignores_slicing():
    both = pa.concat_arrays([lift(1), lift(2)])
    assert value_digest(both.slice(1, 1)) == value_digest(lift(2))
    assert value_digest(lift(1)) != value_digest(lift(2))
    assert value_digest(pa.array([1], pa.int64())) != value_digest(pa.array([1], pa.int32()))




def test_metadata_json_handles_dora_types():
    ts = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    text = metadata_json({"timestamp": ts, "raw": b"\x01\x02", "arr": np.arange(2), "w": 4})
    assert json.loads(text) == {"timestamp": "2026-01-01T00:00:00+00:00", "raw": "0102", "arr": [0, 1], "w": 4}
