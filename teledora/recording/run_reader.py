"""Reading a run directory back: :class:`RunReader` and the rows it yields.

Works on a complete run and on one cut short by a crash: a reader stops
cleanly at a torn last batch. The layout is :mod:`teledora.recording.run_dir`'s.

A topic file with a checksum index (format 2) is checked before any of its
bytes reach Arrow: only messages whose CRC-32 matches are parsed, a corrupt
batch is skipped and reported (:attr:`TopicTable.bad_batches`) and the batches
after it are still read. Arrow can abort the process on some malformed IPC
bytes, so bytes that no checksum vouches for are never parsed in a run that
has checksums. Files of format 1 runs (no index) are read as before.
"""

from __future__ import annotations

import heapq
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from teledora.operators.recording.batch_checksums import BatchCheck, TopicCheck, check_topic_bytes
from teledora.recording.run_dir import (
    INDEX_SUFFIX,
    MANIFEST_NAME,
    TOPIC_SUFFIX,
    RunFormatError,
    check_topic_name,
    read_manifest,
    record_schema,
    split_topic,
)
from teledora.recording.topic_aliases import current_source


@dataclass
class RecordedMessage:
    """One recorded dora message."""

    seq: int
    topic: str
    dora_ns: int | None
    recv_ns: int
    stamp_ns: int | None
    metadata: str
    value: pa.Array

    @property
    def node(self) -> str:
        return split_topic(self.topic)[0]

    @property
    def output(self) -> str:
        return split_topic(self.topic)[1]


@dataclass
class TopicTable:
    """A topic file read back: its rows, and whether its end was torn."""

    topic: str
    table: pa.Table
    truncated: bool = False
    value_type: pa.DataType | None = None
    batches: int = 0
    check: TopicCheck | None = None  # None: no checksum index (format 1)

    @property
    def bad_batches(self) -> list[BatchCheck]:
        """Batches (and the schema, as batch -1) that failed their checksum."""
        if self.check is None:
            return []
        bad = [] if self.check.schema is None or self.check.schema.ok else [self.check.schema]
        return bad + self.check.bad_batches


class RunReader:
    """Reads a run directory (complete, or cut short by a crash).

    Attributes:
        run_dir: The directory.
        manifest: ``manifest.json`` as a dict (empty if it is missing).
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        if not self.run_dir.is_dir():
            raise RunFormatError(f"{self.run_dir} is not a directory")
        path = self.run_dir / MANIFEST_NAME
        if not path.exists() and not any(self.run_dir.glob(f"*{TOPIC_SUFFIX}")):
            raise RunFormatError(f"{self.run_dir} has neither {MANIFEST_NAME} nor *{TOPIC_SUFFIX} files")
        self.manifest, self.manifest_problem = read_manifest(self.run_dir)
        if not path.exists():
            self.manifest_problem = ""

    def __repr__(self) -> str:
        return f"RunReader({str(self.run_dir)!r})"

    @property
    def topics(self) -> list[str]:
        """Topic names, sorted."""
        return sorted(p.name[: -len(TOPIC_SUFFIX)] for p in self.run_dir.glob(f"*{TOPIC_SUFFIX}"))

    def sources(self) -> dict[str, tuple[str, str]]:
        """Topic -> (node, output) it was recorded from: the recorder's input
        wiring from the manifest where known, else the ``node__output`` name;
        an output that has since moved to another node is named as it is
        today (:mod:`teledora.recording.topic_aliases`)."""
        wiring = self.manifest.get("recorded_inputs") or {}
        out: dict[str, tuple[str, str]] = {}
        for topic in self.topics:
            source = wiring.get(topic)
            if isinstance(source, str) and source.count("/") == 1:
                node, output = source.split("/")
            else:
                node, output = split_topic(topic)
            out[topic] = current_source(node, output)
        return out

    def topics_of(self, node: str) -> dict[str, str]:
        """Topic -> output id, for the recorded outputs of ``node``."""
        return {t: o for t, (n, o) in self.sources().items() if n == node}

    @property
    def complete(self) -> bool:
        """True when the recorder closed the run normally."""
        return bool(self.manifest.get("complete"))

    def read_topic(self, topic: str) -> TopicTable:
        """All readable rows of one topic; stops at a torn final batch."""
        check_topic_name(topic)
        path = self.run_dir / f"{topic}{TOPIC_SUFFIX}"
        if not path.exists():
            raise RunFormatError(f"{self.run_dir} has no topic {topic!r}")
        index_path = path.with_name(path.name + INDEX_SUFFIX)
        if index_path.exists() or self.checksummed:
            return self._read_checked(topic, path, index_path)
        source = pa.memory_map(str(path), "r")
        try:
            reader = ipc.open_stream(source)
        except (pa.ArrowInvalid, OSError):
            return TopicTable(topic, _empty_table(), truncated=path.stat().st_size > 0)
        batches: list[pa.RecordBatch] = []
        truncated = False
        while True:
            try:
                batches.append(reader.read_next_batch())
            except StopIteration:
                break
            except (pa.ArrowInvalid, OSError):
                truncated = True
                break
        table = pa.Table.from_batches(batches, schema=reader.schema)
        value_type = reader.schema.field("value").type.value_type
        return TopicTable(topic, table, truncated, value_type, len(batches))

    @property
    def checksummed(self) -> bool:
        """True for a run written with checksum indexes (format 2 or later)."""
        version = self.manifest.get("format_version")
        return (isinstance(version, int) and version >= 2) or any(self.run_dir.glob(f"*{TOPIC_SUFFIX}{INDEX_SUFFIX}"))

    def check_topic(self, topic: str) -> TopicCheck:
        """The checksum verdict on one topic file (a missing index is a problem)."""
        check_topic_name(topic)
        path = self.run_dir / f"{topic}{TOPIC_SUFFIX}"
        return _check_file(path, path.with_name(path.name + INDEX_SUFFIX))

    def _read_checked(self, topic: str, path: Path, index_path: Path) -> TopicTable:
        data = map_file(path)
        check = _check_file(path, index_path, data)
        schema = None
        if check.schema is not None and check.schema.ok:
            try:
                schema = ipc.read_schema(pa.py_buffer(memoryview(data)[check.schema.offset : check.schema.offset + check.schema.length]))
                value_type = schema.field("value").type.value_type
            except (pa.ArrowException, KeyError, AttributeError, ValueError) as exc:
                check.schema.ok = False
                check.schema.problem = f"schema unreadable: {exc}"
                schema = None
        if schema is None:
            return TopicTable(topic, _empty_table(), truncated=bool(data), check=check)
        batches: list[pa.RecordBatch] = []
        for b in check.batches:
            if not b.ok:
                continue
            try:
                batch = ipc.read_record_batch(pa.py_buffer(memoryview(data)[b.offset : b.offset + b.length]), schema)
            except (pa.ArrowException, ValueError) as exc:
                b.ok = False
                b.problem = f"batch unreadable: {exc}"
                continue
            if batch.num_rows != b.rows:
                b.ok = False
                b.problem = f"batch holds {batch.num_rows} rows, index says {b.rows}"
                continue
            batches.append(batch)
        table = pa.Table.from_batches(batches, schema=schema)
        truncated = bool(check.tail_bytes or check.torn_index_bytes or check.torn)
        return TopicTable(topic, table, truncated, value_type, len(batches), check)

    def iter_topic(self, topic: str) -> Iterator[RecordedMessage]:
        """The messages of one topic in recorded order."""
        table = self.read_topic(topic).table
        for batch in table.to_batches():
            seqs = batch.column("seq").to_pylist()
            dora = batch.column("dora_ns").to_pylist()
            recv = batch.column("recv_ns").to_pylist()
            stamps = batch.column("stamp_ns").to_pylist()
            metas = batch.column("metadata").to_pylist()
            values = batch.column("value")
            for i, seq in enumerate(seqs):
                yield RecordedMessage(seq, topic, dora[i], recv[i], stamps[i], metas[i], values[i].values)

    def iter_messages(self, topics: Iterable[str] | None = None) -> Iterator[RecordedMessage]:
        """Messages of ``topics`` (default all) merged in global ``seq`` order."""
        chosen = self.topics if topics is None else list(topics)
        return heapq.merge(*(self.iter_topic(t) for t in chosen), key=lambda m: m.seq)

    def iter_sent(self, topics: Iterable[str] | None = None) -> Iterator[RecordedMessage]:
        """Messages of ``topics`` (default all) merged in *send* order: by
        dora's send timestamp (arrival time where it is missing), ties by
        ``seq``. Each topic keeps its recorded order; what changes is how
        topics interleave, which at the recorder follows arrival, not sending."""
        chosen = self.topics if topics is None else list(topics)

        def key(m: RecordedMessage) -> tuple[int, int]:
            return (m.dora_ns if m.dora_ns is not None else m.recv_ns, m.seq)

        return heapq.merge(*(self.iter_topic(t) for t in chosen), key=key)


def map_file(path: Path):
    """The file's bytes, memory-mapped (an empty file gives ``b""``)."""
    with open(path, "rb") as f:
        if f.seek(0, os.SEEK_END) == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _check_file(path: Path, index_path: Path, data=None) -> TopicCheck:
    try:
        index = index_path.read_bytes()
    except OSError:
        check = TopicCheck()
        check.problems.append(f"checksum index {index_path.name} missing")
        return check
    return check_topic_bytes(map_file(path) if data is None else data, index)


def _empty_table() -> pa.Table:
    return record_schema(pa.null(), "").empty_table()
