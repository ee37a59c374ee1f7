"""Run directories: what the recorder writes and what replay and inspection read.

This module gathers the public names of the run directory code in one place,
so callers import them from here; each part lives in its own module:

- :mod:`teledora.recording.run_dir`: the layout (``runs/<YYYYmmdd-HHMMSS>/``, one Arrow
  IPC stream file per topic and a ``manifest.json``; the columns of a topic
  file), topic names, :func:`new_run_dir`, :func:`record_schema`,
  :func:`write_manifest` and the errors (:class:`RecordingError` and its
  subclasses);
- :mod:`teledora.recording.run_writer`: :class:`RunWriter` and :class:`AppendResult`,
  with :mod:`teledora.recording.topic_writer` buffering and flushing each topic's rows;
- :mod:`teledora.recording.run_reader`: :class:`RunReader`, :class:`RecordedMessage`
  and :class:`TopicTable`, which stop cleanly at a torn last batch;
- :mod:`teledora.recording.run_check`: :func:`~teledora.recording.run_check.check_run`
  and :func:`~teledora.recording.run_check.repair_run`, verifying a run against
  its per-batch checksums (:mod:`teledora.operators.recording.batch_checksums`)
  and its manifest, and keeping every good batch;
- :mod:`teledora.recording.run_timing`: :func:`message_time_ns` and
  :func:`run_time_span`, the send times replay and inspection go by;
- :mod:`teledora.operators.recording.recorded_message`: how one dora message becomes a
  row and back (timestamps, metadata JSON, :func:`value_digest`).
"""

from __future__ import annotations

from teledora.operators.recording.recorded_message import (
    dora_timestamp_ns,
    json_default,
    message_stamp_ns,
    metadata_json,
    replay_metadata,
    value_digest,
)
from teledora.recording.run_dir import (
    FORMAT_VERSION,
    MANIFEST_NAME,
    RUN_DIR_TIME_FORMAT,
    TOPIC_SEPARATOR,
    TOPIC_SUFFIX,
    RecordingError,
    RunFormatError,
    TopicNameError,
    TopicTypeError,
    check_topic_name,
    new_run_dir,
    record_schema,
    split_topic,
    topic_name,
    write_manifest,
)
from teledora.recording.run_reader import RecordedMessage, RunReader, TopicTable
from teledora.recording.run_timing import message_time_ns, run_time_span
from teledora.recording.run_writer import AppendResult, RunWriter

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST_NAME",
    "RUN_DIR_TIME_FORMAT",
    "TOPIC_SEPARATOR",
    "TOPIC_SUFFIX",
    "AppendResult",
    "RecordedMessage",
    "RecordingError",
    "RunFormatError",
    "RunReader",
    "RunWriter",
    "TopicNameError",
    "TopicTable",
    "TopicTypeError",
    "check_topic_name",
    "dora_timestamp_ns",
    "json_default",
    "message_stamp_ns",
    "message_time_ns",
    "metadata_json",
    "new_run_dir",
    "record_schema",
    "replay_metadata",
    "run_time_span",
    "split_topic",
    "topic_name",
    "value_digest",
    "write_manifest",
]
