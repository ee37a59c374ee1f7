"""Per-batch checksums of a topic file, and the check of a file against them.

A topic file is an Arrow IPC stream: a schema message, record batch messages
and, once the run is closed, the 8-byte end-of-stream marker. Beside it the
recorder keeps a checksum index: one fixed-size record per message of the
stream, written after the message itself:

=======  ======  ====================================================
offset   type    meaning
=======  ======  ====================================================
0        u64     byte offset of the message in the topic file
8        u64     its length in bytes
16       u32     rows in the batch (``SCHEMA_ROWS`` for the schema)
20       u32     CRC-32 of the message bytes
24       u32     CRC-32 of bytes 0..24 and the record's position
=======  ======  ====================================================

CRC-32 detects every single-bit and every burst error up to 32 bits, so a
flipped bit in a message, in its index record or in the end-of-stream marker
is always found, and the records tile the file exactly, so no byte of it
goes unchecked. :func:`check_topic_bytes` never hands a byte to Arrow: it only
says which byte ranges hold intact messages; the reader parses just those.

Pure functions over bytes: no files here (see :mod:`teledora.recording.run_reader`).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

RECORD = struct.Struct("<QQII")
RECORD_SIZE = RECORD.size + 4
SCHEMA_ROWS = 0xFFFFFFFF
END_OF_STREAM = b"\xff\xff\xff\xff\x00\x00\x00\x00"


def crc32(data) -> int:
    """CRC-32 (zlib's) of a bytes-like object."""
    return zlib.crc32(data) & 0xFFFFFFFF


def index_record(position: int, offset: int, length: int, rows: int, data_crc: int) -> bytes:
    """The index record of the ``position``-th message of a topic file."""
    head = RECORD.pack(offset, length, rows, data_crc)
    return head + struct.pack("<I", crc32(head + struct.pack("<Q", position)))


@dataclass(frozen=True)
class IndexEntry:
    """One index record that passed its own checksum."""

    position: int
    offset: int
    length: int
    rows: int
    data_crc: int

    @property
    def end(self) -> int:
        return self.offset + self.length


@dataclass
class BatchCheck:
    """The verdict on one message of a topic file.

    ``batch`` is the record batch number (0 = first batch), -1 for the schema.
    ``ok`` is true when its bytes match their checksum; ``offset``/``length``
    are None when its index record itself is corrupt."""

    batch: int
    ok: bool
    rows: int | None
    offset: int | None
    length: int | None
    problem: str = ""


@dataclass
class TopicCheck:
    """The verdict on one topic file and its index."""

    schema: BatchCheck | None = None
    batches: list[BatchCheck] = field(default_factory=list)
    closed: bool = False
    tail_bytes: int = 0
    torn_index_bytes: int = 0
    torn: bool = False  # the last indexed message runs past the end of the file
    problems: list[str] = field(default_factory=list)  # besides bad batches and the torn end

    def end_findings(self) -> list[str]:
        """The state of the file's end: a torn index record, a last message cut
        short, bytes past the last indexed message (a run killed mid-write
        leaves these; in a closed run they are corruption)."""
        out = []
        if self.torn_index_bytes:
            out.append(f"index ends in a torn record ({self.torn_index_bytes} bytes)")
        if self.torn:
            out.append("the last indexed message runs past the end of the file")
        if self.tail_bytes:
            out.append(f"{self.tail_bytes} bytes after the last indexed message are not an end-of-stream marker")
        return out

    @property
    def good_batches(self) -> list[BatchCheck]:
        return [b for b in self.batches if b.ok]

    @property
    def bad_batches(self) -> list[BatchCheck]:
        return [b for b in self.batches if not b.ok]

    @property
    def good_rows(self) -> int:
        return sum(b.rows or 0 for b in self.good_batches)

    @property
    def intact(self) -> bool:
        """True when every byte of the file and its index checked out."""
        return (
            not self.problems
            and self.schema is not None
            and self.schema.ok
            and not self.bad_batches
            and self.tail_bytes == 0
            and self.torn_index_bytes == 0
        )


def parse_index(index: bytes) -> tuple[list[IndexEntry | None], int]:
    """The index records (None for one whose own checksum fails) and the
    count of trailing bytes too few for a record (a torn write)."""
    whole = len(index) // RECORD_SIZE
    out: list[IndexEntry | None] = []
    view = memoryview(index)
    for pos in range(whole):
        rec = view[pos * RECORD_SIZE : (pos + 1) * RECORD_SIZE]
        head = bytes(rec[: RECORD.size])
        (stored,) = struct.unpack("<I", rec[RECORD.size :])
        if crc32(head + struct.pack("<Q", pos)) != stored:
            out.append(None)
            continue
        offset, length, rows, data_crc = RECORD.unpack(head)
        out.append(IndexEntry(pos, offset, length, rows, data_crc))
    return out, len(index) - whole * RECORD_SIZE


def check_topic_bytes(data, index: bytes) -> TopicCheck:
    """Checks a topic file's bytes against its checksum index.

    Every message whose record and bytes check out is marked ``ok``; a record
    whose own checksum fails marks its message bad (the byte range is then
    inferred from its neighbours where they are intact). Bytes past the last
    record must be nothing (a run still open, or killed) or exactly the
    end-of-stream marker (a closed file); anything else is reported as
    ``tail_bytes``. Never raises on any input."""
    result = TopicCheck()
    entries, result.torn_index_bytes = parse_index(index)
    size = len(data)
    expected_offset = 0
    for pos, entry in enumerate(entries):
        batch_no = pos - 1
        if entry is None:
            nxt = entries[pos + 1] if pos + 1 < len(entries) else None
            length = (nxt.offset - expected_offset) if nxt is not None and nxt.offset >= expected_offset else None
            check = BatchCheck(batch_no, False, None, expected_offset, length, "index record corrupt")
            if length is not None:
                expected_offset += length
            else:
                expected_offset = -1  # position unknown until an intact record says it
        else:
            problem = ""
            if expected_offset >= 0 and entry.offset != expected_offset:
                problem = f"index says offset {entry.offset}, expected {expected_offset}"
            elif (pos == 0) != (entry.rows == SCHEMA_ROWS):
                problem = "index record of the wrong kind"
            elif entry.end > size:
                problem = f"message ends at byte {entry.end}, past the file's {size}"
            elif crc32(memoryview(data)[entry.offset : entry.end]) != entry.data_crc:
                problem = "checksum mismatch"
            rows = None if entry.rows == SCHEMA_ROWS else entry.rows
            check = BatchCheck(batch_no, not problem, rows, entry.offset, entry.length, problem)
            expected_offset = entry.end
        if pos == 0:
            result.schema = check
        else:
            result.batches.append(check)
    if result.schema is None:
        result.problems.append("index holds no schema record")
    last = entries[-1] if entries else None
    result.torn = last is not None and last.end > size
    if expected_offset < 0:
        result.problems.append("position of the last messages unknown (corrupt index records)")
        return result
    tail = bytes(memoryview(data)[expected_offset:size]) if expected_offset <= size else b""
    if tail == END_OF_STREAM:
        result.closed = True
    elif tail:
        result.tail_bytes = len(tail)
    return result
