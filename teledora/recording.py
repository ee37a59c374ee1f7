"""Run directories: what the recorder writes and what replay and inspection read.

A run directory ``runs/<YYYYmmdd-HHMMSS>/`` holds one Arrow IPC *stream* file
per topic, ``<node>__<output>.arrow``, and a ``manifest.json``. Each row of a
topic file is one dora message:

==========  ==============  ==================================================
column      type            meaning
==========  ==============  ==================================================
seq         uint64          arrival order at the recorder, global over topics
dora_ns     int64 (null)    dora metadata ``timestamp`` (send time), in ns
recv_ns     int64           host time the recorder received the message
stamp_ns    int64 (null)    the message's own ``stamp_ns`` field, if any
metadata    string          the dora metadata as JSON
value       list<T>         the sent array; ``T`` is its Arrow type
==========  ==============  ==================================================

Rows are buffered and written as record batches; :meth:`RunWriter.flush`
pushes them to the operating system, so a killed recorder loses at most the
rows received since the last flush. A reader stops cleanly at a torn last
batch.
"""

from __future__ import annotations

import datetime as _dt
import heapq
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import pyarrow as pa
import pyarrow.ipc as ipc

from teledora.operators.recorded_message import (  # noqa: F401  (re-exported: part of this module's API)
    dora_timestamp_ns,
    json_default,
    message_stamp_ns,
    metadata_json,
    replay_metadata,
    value_digest,
)

FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
TOPIC_SUFFIX = ".arrow"
TOPIC_SEPARATOR = "__"
RUN_DIR_TIME_FORMAT = "%Y%m%d-%H%M%S"
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class RecordingError(Exception):
    """Base class for run directory errors."""


class TopicNameError(RecordingError):
    """A topic name that cannot be a file name or has no ``node__output`` form."""


class TopicTypeError(RecordingError):
    """A message whose Arrow type differs from the type its topic started with."""


class RunFormatError(RecordingError):
    """A directory that is not a readable run directory."""


# --------------------------------------------------------------------------- names


def topic_name(node: str, output: str) -> str:
    """The topic (and recorder input id) of ``node/output``: ``node__output``."""
    topic = f"{node}{TOPIC_SEPARATOR}{output}"
    check_topic_name(topic)
    return topic


def check_topic_name(topic: str) -> None:
    """Raises :class:`TopicNameError` unless ``topic`` is a safe file stem."""
    if not _TOPIC_NAME.match(topic or ""):
        raise TopicNameError(f"topic {topic!r} must match {_TOPIC_NAME.pattern}")


def split_topic(topic: str) -> tuple[str, str]:
    """``"xr__controllers"`` -> ``("xr", "controllers")``."""
    node, sep, output = topic.partition(TOPIC_SEPARATOR)
    if not sep or not node or not output:
        raise TopicNameError(f"topic {topic!r} is not of the form <node>{TOPIC_SEPARATOR}<output>")
    return node, output


def new_run_dir(runs_dir: str | os.PathLike[str], start: _dt.datetime) -> Path:
    """Creates and returns ``runs_dir/<YYYYmmdd-HHMMSS>`` (``-2``, ``-3``… if taken)."""
    base = Path(runs_dir)
    base.mkdir(parents=True, exist_ok=True)
    stem = start.strftime(RUN_DIR_TIME_FORMAT)
    for k in range(1, 1000):
        candidate = base / (stem if k == 1 else f"{stem}-{k}")
        try:
            candidate.mkdir()
            return candidate
        except FileExistsError:
            continue
    raise RecordingError(f"no free run directory name for {stem} in {base}")


# --------------------------------------------------------------------------- writing helpers


def _stamp_column(values: pa.Array, one_per_row: bool, rows: list[pa.Array], metas: list[Mapping[str, Any]]) -> pa.Array:
    """``stamp_ns`` of each row: read in one go from the struct field when every
    row is one struct holding it, else row by row (:func:`message_stamp_ns`)."""
    vtype = values.type
    if one_per_row and pa.types.is_struct(vtype):
        idx = vtype.get_field_index("stamp_ns")
        if idx >= 0 and pa.types.is_integer(vtype.field(idx).type):
            column = values.field(idx)
            if column.null_count == 0:
                return column.cast(pa.int64())
    return pa.array([message_stamp_ns(v, m) for v, m in zip(rows, metas)], type=pa.int64())


def record_schema(value_type: pa.DataType, topic: str) -> pa.Schema:
    """The schema of a topic file whose messages are arrays of ``value_type``."""
    return pa.schema(
        [
            pa.field("seq", pa.uint64(), nullable=False),
            pa.field("dora_ns", pa.int64()),
            pa.field("recv_ns", pa.int64(), nullable=False),
            pa.field("stamp_ns", pa.int64()),
            pa.field("metadata", pa.string(), nullable=False),
            pa.field("value", pa.list_(value_type), nullable=False),
        ],
        metadata={"teledora.topic": topic, "teledora.format": str(FORMAT_VERSION)},
    )


# --------------------------------------------------------------------------- writing


class _TopicWriter:
    """Buffers one topic's rows and appends them to its IPC stream file."""

    def __init__(self, path: Path, topic: str, value_type: pa.DataType, fsync: bool) -> None:
        self.topic = topic
        self.value_type = value_type
        self.schema = record_schema(value_type, topic)
        self._fsync = fsync
        self._file = open(path, "wb")
        self._stream = ipc.new_stream(self._file, self.schema)
        self._file.flush()
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
        self._stream.write_batch(batch)
        self._file.flush()
        if self._fsync:
            os.fsync(self._file.fileno())
        for rows in self._rows.values():
            rows.clear()
        self._values.clear()
        self.pending_bytes = 0
        self.written += n
        return n

    def close(self) -> None:
        self.write_pending()
        self._stream.close()
        self._file.close()


@dataclass
class AppendResult:
    """What :meth:`RunWriter.append` did with one message."""

    seq: int
    topic: str
    dora_ns: int | None


class RunWriter:
    """Writes one run directory.

    Args:
        run_dir: Directory to write (created if missing; see :func:`new_run_dir`).
        manifest: Fields stored in ``manifest.json`` (dataflow text, versions…).
        flush_interval_s: Longest time rows stay buffered (bounds crash loss).
        max_batch_bytes: A topic whose buffer grows past this is written at once.
        large_message_bytes: A flat message (an image) at least this large is
            written at once as its own batch, without a concatenation copy.
        fsync: Also ``fsync`` at each flush (survives power loss, costs latency).
    """

    def __init__(
        self,
        run_dir: str | os.PathLike[str],
        manifest: Mapping[str, Any] | None = None,
        *,
        flush_interval_s: float = 0.5,
        max_batch_bytes: int = 16 * 1024 * 1024,
        large_message_bytes: int = 256 * 1024,
        fsync: bool = False,
        start_ns: int,
    ) -> None:
        if flush_interval_s <= 0:
            raise ValueError(f"flush_interval_s must be > 0, got {flush_interval_s}")
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.flush_interval_ns = int(flush_interval_s * 1e9)
        self.max_batch_bytes = int(max_batch_bytes)
        self.large_message_bytes = int(large_message_bytes)
        self.fsync = fsync
        self._topics: dict[str, _TopicWriter] = {}
        self._next_seq = 0
        self._last_flush_ns = start_ns
        self.type_errors: dict[str, int] = {}
        self.manifest: dict[str, Any] = dict(manifest or {})
        self.manifest.update(
            {
                "format": "teledora-run",
                "format_version": FORMAT_VERSION,
                "start_ns": int(start_ns),
                "end_ns": None,
                "complete": False,
                "flush_interval_s": flush_interval_s,
                "fsync": fsync,
                "topics": {},
            }
        )
        self._write_manifest()

    @property
    def messages(self) -> int:
        """Messages accepted so far (flushed or buffered)."""
        return self._next_seq

    def counts(self) -> dict[str, int]:
        """Per-topic message counts, flushed and buffered."""
        return {t: w.written + w.pending for t, w in sorted(self._topics.items())}

    def append(self, topic: str, value: pa.Array, metadata: Mapping[str, Any], recv_ns: int) -> AppendResult:
        """Buffers one message; raises :class:`TopicTypeError` when its type
        differs from the topic's first message (the message is not stored)."""
        writer = self._topics.get(topic)
        if writer is None:
            check_topic_name(topic)
            writer = _TopicWriter(self.run_dir / f"{topic}{TOPIC_SUFFIX}", topic, value.type, self.fsync)
            self._topics[topic] = writer
        elif value.type != writer.value_type:
            self.type_errors[topic] = self.type_errors.get(topic, 0) + 1
            raise TopicTypeError(f"topic {topic!r} carries {writer.value_type}, got {value.type}")
        seq = self._next_seq
        self._next_seq += 1
        dora_ns = dora_timestamp_ns(metadata)
        large = writer.pending == 0 and writer.flat and value.nbytes >= self.large_message_bytes
        writer.add(seq, dora_ns, recv_ns, metadata, value)
        if large or writer.pending_bytes >= self.max_batch_bytes:
            # an image goes out on its own: one row per batch spares a concatenation copy
            writer.write_pending()
        return AppendResult(seq, topic, dora_ns)

    def flush_due(self, now_ns: int) -> bool:
        """True once ``flush_interval_s`` has passed since the last flush."""
        return now_ns - self._last_flush_ns >= self.flush_interval_ns

    def flush(self, now_ns: int) -> int:
        """Writes every buffered row and refreshes the manifest; returns rows written."""
        written = sum(w.write_pending() for w in self._topics.values())
        self._last_flush_ns = now_ns
        self._write_manifest()
        return written

    def close(self, end_ns: int) -> Path:
        """Writes everything, marks the manifest complete and returns the run dir."""
        for writer in self._topics.values():
            writer.close()
        self.manifest["end_ns"] = int(end_ns)
        self.manifest["complete"] = True
        self.manifest["bytes"] = sum(p.stat().st_size for p in self.run_dir.glob(f"*{TOPIC_SUFFIX}"))
        self._write_manifest()
        return self.run_dir

    def _write_manifest(self) -> None:
        self.manifest["topics"] = {
            t: {"count": w.written, "type": str(w.value_type)} for t, w in sorted(self._topics.items())
        }
        self.manifest["type_errors"] = dict(self.type_errors)
        write_manifest(self.run_dir, self.manifest)


def write_manifest(run_dir: Path, manifest: Mapping[str, Any]) -> None:
    """Atomically replaces ``run_dir/manifest.json``."""
    tmp = run_dir / (MANIFEST_NAME + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=json_default))
    os.replace(tmp, run_dir / MANIFEST_NAME)


# --------------------------------------------------------------------------- reading


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
        if path.exists():
            try:
                self.manifest = json.loads(path.read_text())
            except json.JSONDecodeError as exc:
                raise RunFormatError(f"{path}: unreadable manifest: {exc}") from exc
        elif not any(self.run_dir.glob(f"*{TOPIC_SUFFIX}")):
            raise RunFormatError(f"{self.run_dir} has neither {MANIFEST_NAME} nor *{TOPIC_SUFFIX} files")
        else:
            self.manifest = {}

    def __repr__(self) -> str:
        return f"RunReader({str(self.run_dir)!r})"

    @property
    def topics(self) -> list[str]:
        """Topic names, sorted."""
        return sorted(p.name[: -len(TOPIC_SUFFIX)] for p in self.run_dir.glob(f"*{TOPIC_SUFFIX}"))

    def sources(self) -> dict[str, tuple[str, str]]:
        """Topic -> (node, output) it was recorded from: the recorder's input
        wiring from the manifest where known, else the ``node__output`` name."""
        wiring = self.manifest.get("recorded_inputs") or {}
        out: dict[str, tuple[str, str]] = {}
        for topic in self.topics:
            source = wiring.get(topic)
            if isinstance(source, str) and source.count("/") == 1:
                node, output = source.split("/")
                out[topic] = (node, output)
            else:
                out[topic] = split_topic(topic)
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


def _empty_table() -> pa.Table:
    return record_schema(pa.null(), "").empty_table()


# --------------------------------------------------------------------------- replay timing


def message_time_ns(msg: RecordedMessage) -> int:
    """When a recorded message was sent: dora's timestamp, else arrival time."""
    return msg.dora_ns if msg.dora_ns is not None else msg.recv_ns


def run_time_span(reader: RunReader) -> tuple[int, int] | None:
    """(first, last) send time over every topic of a run, or None if it is empty."""
    first: int | None = None
    last: int | None = None
    for topic in reader.topics:
        table = reader.read_topic(topic).table
        if table.num_rows == 0:
            continue
        dora = table.column("dora_ns").to_pylist()
        recv = table.column("recv_ns").to_pylist()
        times = [d if d is not None else r for d, r in zip(dora, recv)]
        lo, hi = min(times), max(times)
        first = lo if first is None else min(first, lo)
        last = hi if last is None else max(last, hi)
    return None if first is None else (first, last)
