"""Reading a run directory back: :class:`RunReader` and the rows it yields.

Works on a complete run and on one cut short by a crash: a reader stops
cleanly at a torn last batch. The layout is :mod:`teledora.recording.run_dir`'s.
"""

from __future__ import annotations

import heapq
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.ipc as ipc

from teledora.recording.run_dir import MANIFEST_NAME, TOPIC_SUFFIX, RunFormatError, check_topic_name, record_schema, split_topic


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
