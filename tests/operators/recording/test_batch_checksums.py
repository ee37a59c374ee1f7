"""Checksum index of a topic file: every single-bit flip is found, no input raises."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.ipc as ipc
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.recording.batch_checksums import (
    END_OF_STREAM,
    RECORD_SIZE,
    SCHEMA_ROWS,
    check_topic_bytes,
    crc32,
    index_record,
)


def _stream(batches: int, closed: bool = True) -> tuple[bytes, bytes]:
    """A stream file written by Arrow's own stream writer, and an index built
    independently from the message boundaries Arrow's reader reports."""
    schema = pa.schema([("a", pa.int64()), ("s", pa.string())])
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, schema) as w:
        for i in range(batches):
            w.write_batch(pa.record_batch([pa.array(range(i + 1)), pa.array(["x" * i] * (i + 1))], schema=schema))
    data = sink.getvalue().to_pybytes()
    # walk the messages with Arrow's message reader: the truth for the boundaries
    reader = ipc.MessageReader.open_stream(pa.py_buffer(data))
    index, offset, pos = b"", 0, 0
    while True:
        try:
            msg = reader.read_next_message()
        except StopIteration:
            break
        length = len(msg.serialize().to_pybytes())
        rows = SCHEMA_ROWS if pos == 0 else pos
        index += index_record(pos, offset, length, rows, crc32(data[offset : offset + length]))
        offset += length
        pos += 1
    assert data[offset:] == END_OF_STREAM
    return (data if closed else data[:offset]), index


def test_intact_stream_checks_out_and_tiles_the_file():
    data, index = _stream(4)
    check = check_topic_bytes(data, index)
    assert check.intact and check.closed
    assert [b.rows for b in check.batches] == [1, 2, 3, 4]
    assert check.schema.offset == 0 and check.batches[-1].offset + check.batches[-1].length + 8 == len(data)


def test_open_stream_without_end_marker_is_not_a_problem():
    data, index = _stream(3, closed=False)
    check = check_topic_bytes(data, index)
    assert check.intact and not check.closed


def test_every_single_bit_flip_in_data_or_index_is_detected():
    data, index = _stream(3)
    for where in ("data", "index"):
        buf = data if where == "data" else index
        for byte in range(len(buf)):
            for bit in range(8):
                flipped = bytearray(buf)
                flipped[byte] ^= 1 << bit
                check = check_topic_bytes(bytes(flipped), index) if where == "data" else check_topic_bytes(data, bytes(flipped))
                assert not check.intact, f"{where} byte {byte} bit {bit} went unnoticed"


def test_a_bad_batch_leaves_the_others_good():
    data, index = _stream(4)
    check = check_topic_bytes(data, index)
    middle = check.batches[1]
    flipped = bytearray(data)
    flipped[middle.offset + middle.length - 3] ^= 0x10
    after = check_topic_bytes(bytes(flipped), index)
    assert [b.ok for b in after.batches] == [True, False, True, True]
    assert after.bad_batches[0].problem == "checksum mismatch" and after.bad_batches[0].batch == 1


def test_corrupt_index_record_marks_only_its_batch_and_infers_its_range():
    data, index = _stream(4)
    flipped = bytearray(index)
    flipped[2 * RECORD_SIZE + 3] ^= 1  # the record of batch 1
    check = check_topic_bytes(data, bytes(flipped))
    assert [b.ok for b in check.batches] == [True, False, True, True]
    good = check_topic_bytes(data, index)
    assert (check.batches[1].offset, check.batches[1].length) == (good.batches[1].offset, good.batches[1].length)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=600), st.binary(max_size=200))
def test_any_bytes_give_a_verdict_never_an_exception(data, index):
    check = check_topic_bytes(data, index)
    assert isinstance(check.intact, bool)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10_000), st.binary(min_size=1, max_size=64))
def test_random_overwrites_of_a_real_stream_are_detected(position, junk):
    data, index = _stream(3)
    pos = position % len(data)
    corrupted = bytearray(data)
    corrupted[pos : pos + len(junk)] = junk
    corrupted = bytes(corrupted[: len(data)]) if len(corrupted) >= len(data) else bytes(corrupted)
    if corrupted == data:
        return
    assert not check_topic_bytes(corrupted, index).intact
