"""Writing a run directory: :class:`RunWriter` takes messages as they arrive.

Rows are buffered and written as record batches; :meth:`RunWriter.flush`
pushes them to the operating system, so a killed recorder loses at most the
rows received since the last flush. The layout is :mod:`teledora.recording.run_dir`'s;
each topic's buffer is a :class:`teledora.recording.topic_writer.TopicWriter`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa

from teledora.operators.recording.recorded_message import dora_timestamp_ns
from teledora.recording.run_dir import (
    FORMAT_VERSION,
    TOPIC_SUFFIX,
    TopicNameError,
    TopicTypeError,
    check_topic_name,
    split_topic,
    write_manifest,
)
from teledora.recording.topic_writer import TopicWriter


@dataclass
class AppendResult:
    """What :meth:`RunWriter.append` did with one message."""

    seq: int | None  # None: an empty message held until its topic's type is known
    topic: str
    dora_ns: int | None
    rejected: list[str] = field(default_factory=list)  # held empty messages now refused


class RunWriter:
    """Writes one run directory.

    Args:
        run_dir: Directory to write (created if missing; see
            :func:`teledora.recording.run_dir.new_run_dir`).
        manifest: Fields stored in ``manifest.json`` (dataflow text, versions…).
        flush_interval_s: Longest time rows stay buffered (bounds crash loss).
        max_batch_bytes: A topic whose buffer grows past this is written at once.
        large_message_bytes: A flat message (an image) at least this large is
            written at once as its own batch, without a concatenation copy.
        fsync: Also ``fsync`` at each flush (survives power loss, costs latency).
        manifest_interval_s: A flush rewrites ``manifest.json`` only when a
            topic or an error count is new, or when this long has passed since
            the last rewrite: the manifest carries its whole provenance (the
            dataflow text, versions), so rewriting it at every flush cost more
            than writing the rows. Until the run is complete its counts are
            therefore lower bounds of what the files hold (what ``log check``
            expects of an incomplete run); the rows themselves are in the
            files at every flush.
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
        manifest_interval_s: float = 1.0,
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
        self.manifest_interval_ns = int(manifest_interval_s * 1e9)
        self._manifest_ns = start_ns
        self._manifest_dirty = False
        self._topics: dict[str, TopicWriter] = {}
        self._next_seq = 0
        self._last_flush_ns = start_ns
        self.type_errors: dict[str, int] = {}
        self.name_errors: dict[str, int] = {}
        # messages refused before they reached a topic (no Arrow value, bad
        # metadata, an impossible image): topic -> {"count", "last"}
        self.rejected: dict[str, dict[str, Any]] = {}
        # empty messages of a topic that has no type yet: (dora_ns, recv_ns, metadata, value)
        self._held: dict[str, list[tuple[int | None, int, Mapping[str, Any], pa.Array]]] = {}
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

    def reject(self, topic: Any, reason: str) -> None:
        """Counts a message that arrived on ``topic`` and was refused, so that
        the run says it came (manifest ``rejected``: count and last reason)."""
        key = topic if isinstance(topic, str) else repr(topic)
        entry = self.rejected.setdefault(key, {"count": 0, "last": ""})
        entry["count"] += 1
        entry["last"] = reason
        self._manifest_dirty = True

    def append(self, topic: str, value: pa.Array, metadata: Mapping[str, Any], recv_ns: int) -> AppendResult:
        """Buffers one message.

        A topic's value type is fixed by its first *non-empty* message: an
        empty array carries no values, so it cannot be allowed to decide the
        type. Empty messages that arrive before the type is known are held
        and numbered when it is (just before the message that fixes it);
        those of another type are then refused and listed in
        :attr:`AppendResult.rejected` (and counted in :attr:`type_errors`).

        Raises:
            TopicNameError: ``topic`` is not ``<node>__<output>`` or is no
                safe file name (counted in :attr:`name_errors`).
            TopicTypeError: the type differs from the topic's (counted in
                :attr:`type_errors`); the message is not stored and uses no
                sequence number.
        """
        writer = self._topics.get(topic)
        dora_ns = dora_timestamp_ns(metadata)
        rejected: list[str] = []
        if writer is None:
            try:
                check_topic_name(topic)
                split_topic(topic)
            except TopicNameError:
                self.name_errors[topic] = self.name_errors.get(topic, 0) + 1
                self._manifest_dirty = True
                raise
            if len(value) == 0:
                self._held.setdefault(topic, []).append((dora_ns, recv_ns, dict(metadata), value))
                return AppendResult(None, topic, dora_ns)
            writer = self._open_topic(topic, value.type)
            rejected = self._release_held(topic, writer)
        elif value.type != writer.value_type:
            self.type_errors[topic] = self.type_errors.get(topic, 0) + 1
            self._manifest_dirty = True
            raise TopicTypeError(f"topic {topic!r} carries {writer.value_type}, got {value.type}")
        seq = self._add(writer, dora_ns, recv_ns, metadata, value)
        return AppendResult(seq, topic, dora_ns, rejected)

    def _open_topic(self, topic: str, value_type: pa.DataType) -> TopicWriter:
        writer = TopicWriter(self.run_dir / f"{topic}{TOPIC_SUFFIX}", topic, value_type, self.fsync)
        self._topics[topic] = writer
        self._manifest_dirty = True
        return writer

    def _release_held(self, topic: str, writer: TopicWriter) -> list[str]:
        """Numbers and buffers the held empty messages of ``topic`` whose type
        is the topic's; returns why each of the others was refused."""
        rejected = []
        for dora_ns, recv_ns, metadata, value in self._held.pop(topic, []):
            if value.type != writer.value_type:
                self.type_errors[topic] = self.type_errors.get(topic, 0) + 1
                self._manifest_dirty = True
                rejected.append(f"topic {topic!r} carries {writer.value_type}, got an empty {value.type}")
                continue
            self._add(writer, dora_ns, recv_ns, metadata, value)
        return rejected

    def _add(self, writer: TopicWriter, dora_ns: int | None, recv_ns: int, metadata: Mapping[str, Any], value: pa.Array) -> int:
        seq = self._next_seq
        self._next_seq += 1
        large = writer.pending == 0 and writer.flat and value.nbytes >= self.large_message_bytes
        writer.add(seq, dora_ns, recv_ns, metadata, value)
        if large or writer.pending_bytes >= self.max_batch_bytes:
            # an image goes out on its own: one row per batch spares a concatenation copy
            writer.write_pending()
        return seq

    def flush_due(self, now_ns: int) -> bool:
        """True once ``flush_interval_s`` has passed since the last flush."""
        return now_ns - self._last_flush_ns >= self.flush_interval_ns

    def flush(self, now_ns: int) -> int:
        """Writes every buffered row; refreshes the manifest when a topic or an
        error is new or ``manifest_interval_s`` has passed. Returns rows written."""
        written = sum(w.write_pending() for w in self._topics.values())
        self._last_flush_ns = now_ns
        if self._manifest_dirty or now_ns - self._manifest_ns >= self.manifest_interval_ns:
            self._manifest_ns = now_ns
            self._write_manifest()
        return written

    def close(self, end_ns: int) -> list[str]:
        """Writes everything and marks the manifest complete. Returns why each
        held empty message was refused (a topic that only ever carried empty
        messages takes the type of the first one)."""
        rejected: list[str] = []
        for topic, held in list(self._held.items()):
            rejected += self._release_held(topic, self._open_topic(topic, held[0][3].type))
        for writer in self._topics.values():
            writer.close()
        self.manifest["end_ns"] = int(end_ns)
        self.manifest["complete"] = True
        self.manifest["bytes"] = sum(p.stat().st_size for p in self.run_dir.glob(f"*{TOPIC_SUFFIX}"))
        self._write_manifest()
        return rejected

    def _write_manifest(self) -> None:
        self.manifest["topics"] = {
            t: {"count": w.written, "type": w.type_text} for t, w in sorted(self._topics.items())
        }
        self._manifest_dirty = False
        self.manifest["type_errors"] = dict(self.type_errors)
        self.manifest["name_errors"] = dict(self.name_errors)
        self.manifest["rejected"] = {t: dict(e) for t, e in sorted(self.rejected.items())}
        write_manifest(self.run_dir, self.manifest)
