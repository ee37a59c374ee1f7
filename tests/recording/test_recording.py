"""Run directory format: write, read back, torn ends, digests."""

from __future__ import annotations

import datetime as dt
import json

import numpy as np
import pyarrow as pa
import pytest

from teledora.operators.contract.messages import encode
from teledora.recording.run_check import check_run
from teledora.recording import (
    MANIFEST_NAME,
    RunFormatError,
    RunReader,
    RunWriter,
    TopicNameError,
    TopicTypeError,
    new_run_dir,
    split_topic,
    topic_name,
)


def lift(i: int) -> pa.StructArray:
    return encode("LiftState", {"stamp_ns": 1000 + i, "height_m": 0.01 * i, "velocity_m_s": 0.0, "homed": True})


def image(i: int) -> pa.Array:
    return pa.array(np.full(32 * 24 * 3, i % 256, dtype=np.uint8))


def test_round_trip_keeps_types_order_and_fields(tmp_path):
    ts = dt.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=dt.timezone.utc)
    w = RunWriter(tmp_path, {"note": "x"}, start_ns=0)
    w.append("lift__state", lift(0), {"timestamp": ts}, recv_ns=10)
    w.append("renderer__chest", image(1), {"stamp_ns": 77, "width": 32}, recv_ns=11)
    w.append("lift__state", lift(2), {}, recv_ns=12)
    w.close(end_ns=99)

    r = RunReader(tmp_path)
    assert r.topics == ["lift__state", "renderer__chest"]
    assert r.complete and r.manifest["note"] == "x" and r.manifest["end_ns"] == 99
    assert r.manifest["topics"]["lift__state"]["count"] == 2
    lift_table = r.read_topic("lift__state")
    assert lift_table.value_type == lift(0).type
    schema = lift_table.table.schema
    assert schema.field("seq").type == pa.uint64()
    assert schema.field("value").type == pa.list_(lift(0).type)
    msgs = list(r.iter_messages())
    assert [m.seq for m in msgs] == [0, 1, 2]
    assert [m.topic for m in msgs] == ["lift__state", "renderer__chest", "lift__state"]
    assert msgs[0].dora_ns == int(ts.timestamp()) * 1_000_000_000 + 123_456_000
    assert msgs[0].stamp_ns == 1000 and msgs[1].stamp_ns == 77 and msgs[2].stamp_ns == 1002
    assert msgs[1].dora_ns is None and msgs[1].recv_ns == 11
    assert json.loads(msgs[1].metadata) == {"stamp_ns": 77, "width": 32}
    assert msgs[0].value.equals(lift(0)) and msgs[2].value.equals(lift(2))
    assert msgs[1].value.equals(image(1))
    assert msgs[0].node == "lift" and msgs[0].output == "state"


def test_rows_are_invisible_until_flush_and_manifest_counts_flushed(tmp_path):
    w = RunWriter(tmp_path, start_ns=0, flush_interval_s=1.0)
    for i in range(5):
        w.append("lift__state", lift(i), {}, recv_ns=i)
    assert RunReader(tmp_path).read_topic("lift__state").table.num_rows == 0
    assert not w.flush_due(999_999_999) and w.flush_due(1_000_000_000)
    assert w.flush(1_000_000_000) == 5
    assert RunReader(tmp_path).read_topic("lift__state").table.num_rows == 5
    manifest = json.loads((tmp_path / MANIFEST_NAME).read_text())
    assert manifest["topics"]["lift__state"]["count"] == 5 and manifest["complete"] is False


def test_large_buffer_is_written_without_waiting_for_the_interval(tmp_path):
    w = RunWriter(tmp_path, start_ns=0, max_batch_bytes=7000)
    for i in range(3):
        w.append("renderer__chest", image(i), {}, recv_ns=i)  # 2304 B each (+256 B row overhead)
    table = RunReader(tmp_path).read_topic("renderer__chest")
    assert table.table.num_rows == 3 and table.batches == 1


def test_type_change_is_rejected_without_using_a_sequence_number(tmp_path):
    w = RunWriter(tmp_path, start_ns=0)
    w.append("lift__state", lift(0), {}, recv_ns=0)
    with pytest.raises(TopicTypeError, match="lift__state"):
        w.append("lift__state", pa.array([1.0]), {}, recv_ns=1)
    assert w.append("lift__state", lift(1), {}, recv_ns=2).seq == 1
    assert w.type_errors == {"lift__state": 1}
    w.close(3)
    assert RunReader(tmp_path).manifest["type_errors"] == {"lift__state": 1}


def test_torn_last_batch_reads_back_everything_before_it(tmp_path):
    w = RunWriter(tmp_path, start_ns=0)
    for i in range(4):
        w.append("lift__state", lift(i), {}, recv_ns=i)
    w.flush(1)
    size_after_first = (tmp_path / "lift__state.arrow").stat().st_size
    for i in range(4, 8):
        w.append("lift__state", lift(i), {}, recv_ns=i)
    w.flush(2)
    path = tmp_path / "lift__state.arrow"
    data = path.read_bytes()
    path.write_bytes(data[: size_after_first + (len(data) - size_after_first) // 2])
    t = RunReader(tmp_path).read_topic("lift__state")
    assert t.truncated and t.table.num_rows == 4
    assert t.table.column("seq").to_pylist() == [0, 1, 2, 3]


def test_run_dir_names_and_collisions(tmp_path):
    start = dt.datetime(2026, 11, 29, 23, 1, 2)
    a = new_run_dir(tmp_path / "runs", start)
    b = new_run_dir(tmp_path / "runs", start)
    assert a.name == "20261129-230102" and b.name == "20261129-230102-2"


def test_topic_names():
    assert topic_name("xr", "controllers") == "xr__controllers"
    assert split_topic("renderer__left_wrist") == ("renderer", "left_wrist")
    with pytest.raises(TopicNameError):
        split_topic("no_separator")
    with pytest.raises(TopicNameError):
        topic_name("a/b", "c")


def test_reader_refuses_a_directory_that_is_not_a_run(tmp_path):
    with pytest.raises(RunFormatError):
        RunReader(tmp_path)
    with pytest.raises(RunFormatError):
        RunReader(tmp_path / "missing")


def test_the_manifest_is_rewritten_for_a_new_topic_or_after_its_interval_not_at_every_flush(tmp_path):
    """Counts in the manifest of an unfinished run are lower bounds (what
    ``log check`` expects of a killed run); the rows are in the files at
    every flush, and a new topic reaches the manifest at its first flush."""
    w = RunWriter(tmp_path, start_ns=0, flush_interval_s=0.25, manifest_interval_s=1.0)
    counts = lambda: json.loads((tmp_path / MANIFEST_NAME).read_text())["topics"]  # noqa: E731
    w.append("lift__state", lift(0), {}, recv_ns=0)
    w.flush(250_000_000)
    assert counts() == {"lift__state": {"count": 1, "type": str(lift(0).type)}}  # a new topic
    w.append("lift__state", lift(1), {}, recv_ns=300_000_000)
    w.flush(500_000_000)
    assert RunReader(tmp_path).read_topic("lift__state").table.num_rows == 2
    assert counts()["lift__state"]["count"] == 1  # within the interval: not rewritten
    report = check_run(tmp_path)
    assert not report.topics["lift__state"].problems, report.topics["lift__state"].problems
    w.append("lift__state", lift(2), {}, recv_ns=600_000_000)
    w.flush(1_250_000_000)
    assert counts()["lift__state"]["count"] == 3  # the interval has passed
    w.close(1_300_000_000)
    assert counts()["lift__state"]["count"] == 3 and json.loads((tmp_path / MANIFEST_NAME).read_text())["complete"]
