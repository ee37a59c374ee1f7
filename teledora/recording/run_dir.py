"""The run directory layout: its names, its topic files' schema, its manifest.

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

The writer (:mod:`teledora.recording.run_writer`) and the reader
(:mod:`teledora.recording.run_reader`) both take their names and schema from here.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import zlib
from pathlib import Path
from typing import Any, Mapping

import pyarrow as pa

from teledora.operators.errors import TeledoraError
from teledora.operators.recording.recorded_message import json_default

FORMAT_VERSION = 2  # 2: every topic file has a checksum index beside it
MANIFEST_NAME = "manifest.json"
TOPIC_SUFFIX = ".arrow"
INDEX_SUFFIX = ".crc"  # <topic>.arrow.crc: the checksum index of <topic>.arrow
TOPIC_SEPARATOR = "__"
RUN_DIR_TIME_FORMAT = "%Y%m%d-%H%M%S"
_TOPIC_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")


class RecordingError(TeledoraError):
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


# --------------------------------------------------------------------------- files


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


MANIFEST_CHECKSUM_KEY = "manifest_crc32"


def _manifest_text(manifest: Mapping[str, Any]) -> str:
    return json.dumps(manifest, indent=2, sort_keys=True, default=json_default)


def write_manifest(run_dir: Path, manifest: Mapping[str, Any]) -> None:
    """Atomically replaces ``run_dir/manifest.json``; the file carries the
    CRC-32 of its own canonical JSON text (``manifest_crc32``)."""
    body = {k: v for k, v in manifest.items() if k != MANIFEST_CHECKSUM_KEY}
    # round-trip first, so the reader's canonical text is the one checksummed
    body = json.loads(_manifest_text(body))
    body[MANIFEST_CHECKSUM_KEY] = zlib.crc32(_manifest_text(body).encode()) & 0xFFFFFFFF
    tmp = run_dir / (MANIFEST_NAME + ".tmp")
    tmp.write_text(_manifest_text(body))
    os.replace(tmp, run_dir / MANIFEST_NAME)


def read_manifest(run_dir: Path) -> tuple[dict[str, Any], str]:
    """``(manifest, problem)``: the manifest and ``""`` when it is intact;
    ``({}, why)`` when it is missing or not a JSON object; the parsed manifest
    and why when it fails its checksum (its values may be wrong) or lacks
    one. Never raises on the file's contents."""
    path = run_dir / MANIFEST_NAME
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}, "no manifest"
    except OSError as exc:
        return {}, f"manifest unreadable: {exc}"
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        return {}, f"manifest is not valid JSON: {exc}"
    if not isinstance(manifest, dict):
        return {}, "manifest is not a JSON object"
    stored = manifest.pop(MANIFEST_CHECKSUM_KEY, None)
    if stored is None:
        version = manifest.get("format_version", 1)
        old = isinstance(version, int) and version < 2
        return manifest, "" if old else "manifest has no checksum"
    if zlib.crc32(_manifest_text(manifest).encode()) & 0xFFFFFFFF != stored or raw.decode("utf-8") != _manifest_text({**manifest, MANIFEST_CHECKSUM_KEY: stored}):
        return manifest, "manifest fails its checksum"
    return manifest, ""
