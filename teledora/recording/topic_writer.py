"""One topic's rows on their way into its Arrow IPC stream file.

:class:`teledora.recording.run_writer.RunWriter` keeps one :class:`TopicWriter` per
topic; this module owns the buffering and the batch building, so the writer
only decides *when* a topic's rows go out.

The file is written message by message (the schema, then one record batch
per write, then the end-of-stream marker at close): the bytes are exactly
those of an Arrow IPC stream writer, and each message's offset, length, row
count and CRC-32 go into the topic's checksum index
(:mod:`teledora.operators.recording.batch_checksums`) right after it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa

from teledora.operators.recording.batch_checksums import END_OF_STREAM, SCHEMA_ROWS, crc32, index_record
from teledora.operators.recording.recorded_message import message_stamp_ns, metadata_json
from teledora.recording.run_dir import INDEX_SUFFIX, record_schema


def _stamp_column(values: pa.Array, one_per_row: bool, rows: list[pa.Array], metas: list[Mapping[str, Any]]) -> pa.Array:
    """``stamp_ns`` of each row: read in one go from the struct field when every
    row is one struct holding it, else row by row (:func:`message_stamp_ns`)."""
    vtype = values.type
    if one_per_row and pa.types.is_struct(vtype):
        idx = vtype.get_field_index("stamp_ns")
        if idx >= 0 and pa.types.is_integer(vtype.field(idx).type):
            column = values.field(idx)
            if column.null_count == 0:
                if column.type == pa.int64():
                    return column
                try:
                    return column.cast(pa.int64())
                except pa.ArrowInvalid:
                    pass  # a uint64 stamp beyond int64: row by row, where it reads as none
    return pa.array([message_stamp_ns(v, m) for v, m in zip(rows, metas)], type=pa.int64())


class TopicWriter:
    """Buffers one topic's rows and appends them to its IPC stream file."""

    def __init__(self, path: Path, topic: str, value_type: pa.DataType, fsync: bool) -> None:
        self.topic = topic
        self.value_type = value_type
        self.type_text = str(value_type)  # for the manifest: a nested type's text is slow to build
        self.schema = record_schema(value_type, topic)
        self._fsync = fsync
        self._file = open(path, "wb")
        self._index = open(path.with_name(path.name + INDEX_SUFFIX), "wb")
        self._offset = 0
        self._messages = 0
        self._write_message(self.schema.serialize(), SCHEMA_ROWS)
        self._rows: dict[str, list[Any]] = {k: [] for k in ("seq", "dora_ns", "recv_ns", "metadata")}
        self._values: list[pa.Array] = []
        self.pending_bytes = 0
        self.written = 0
        self.flat = not pa.types.is_nested(value_type)

    def add(self, seq: int, dora_ns: int | None, recv_ns: int, metadata: Mapping[str, Any], value: pa.Array) -> None:
        rows = self._rows
        rows["seq"].append(seq)
        rows["dora_ns"].append(dora_ns)
        rows["recv_ns"].append(recv_ns)
        rows["metadata"].append(metadata)
        self._values.append(value)
        # contract structs are small: a flat estimate spares a walk over buffers
        self.pending_bytes += (value.nbytes if self.flat else 0) + 256

    @property
    def pending(self) -> int:
        return len(self._values)

    def write_pending(self) -> int:
        """Writes buffered rows as one record batch and flushes the file.

        Per-row work that can wait (metadata JSON, ``stamp_ns`` extraction) is
        done here, in bulk, to keep :meth:`add` cheap for the event loop."""
        n = len(self._values)
        if n == 0:
            return 0
        lengths = [0]
        for v in self._values:
            lengths.append(lengths[-1] + len(v))
        values = pa.concat_arrays(self._values) if n > 1 else self._values[0]
        column = pa.ListArray.from_arrays(pa.array(lengths, type=pa.int32()), values, type=self.schema.field("value").type)
        metas = self._rows["metadata"]
        batch = pa.RecordBatch.from_arrays(
            [
                pa.array(self._rows["seq"], type=pa.uint64()),
                pa.array(self._rows["dora_ns"], type=pa.int64()),
                pa.array(self._rows["recv_ns"], type=pa.int64()),
                _stamp_column(values, lengths[-1] == n, self._values, metas),
                pa.array([metadata_json(m) for m in metas], type=pa.string()),
                column,
            ],
            schema=self.schema,
        )
        self._write_message(batch.serialize(), n)
        for rows in self._rows.values():
            rows.clear()
        self._values.clear()
        self.pending_bytes = 0
        self.written += n
        return n

    def _write_message(self, message: pa.Buffer, rows: int) -> None:
        """Appends one IPC message, then its index record; both reach the
        operating system (and the disk with ``fsync``) before this returns."""
        self._file.write(message)
        self._file.flush()
        record = index_record(self._messages, self._offset, message.size, rows, crc32(message))
        self._index.write(record)
        self._index.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
            os.fsync(self._index.fileno())
        self._offset += message.size
        self._messages += 1

    def close(self) -> None:
        self.write_pending()
        self._file.write(END_OF_STREAM)
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        self._file.close()
        self._index.close()
