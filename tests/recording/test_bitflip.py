"""Single-bit flips anywhere in a recorded run: always detected, never a
traceback, never an abort. Each flip is read in a forked child, so an abort
inside Arrow would show as a signal instead of killing the test run."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import traceback

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from teledora.commands.log import export_mcap, summarize
from teledora.operators.contract.messages import encode
from teledora.recording import RunReader, RunWriter
from teledora.recording.run_check import check_run, repair_run

DETECTED, SILENT_SAME, SILENT_DIFFERENT, TRACEBACK = 10, 11, 12, 13


def _record(path):
    w = RunWriter(path, {"dataflow_yaml": "nodes: []\n"}, start_ns=0, flush_interval_s=0.5)
    for i in range(60):
        w.append("lift__state", encode("LiftState", {"stamp_ns": i, "height_m": 0.01 * i, "velocity_m_s": 0.0, "homed": True}), {"seq": i}, recv_ns=i)
        if i % 10 == 0:
            w.append("cam__rgb", pa.array(np.full(3000, i, dtype=np.uint8)), {"width": 50, "height": 20, "encoding": "rgb8"}, recv_ns=i)
        if i % 15 == 14:
            w.flush(i * 1_000_000_000)
    w.close(100)
    return path


def content_digest(run_dir) -> str:
    """SHA-256 over every readable row of every topic, in file order."""
    reader = RunReader(run_dir)
    h = hashlib.sha256()
    for topic in reader.topics:
        table = reader.read_topic(topic).table
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, table.schema) as w:
            w.write_table(table)
        h.update(topic.encode() + sink.getvalue().to_pybytes())
    return h.hexdigest()


def read_everything(run_dir, scratch) -> bool:
    """What a user would do with the run; True when the check found a problem."""
    report = check_run(run_dir)
    reader = RunReader(run_dir)
    summarize(reader)
    for _ in reader.iter_messages():
        pass
    export_mcap(reader, scratch / "out.mcap")
    return not report.ok


def probe(run_dir, scratch, baseline: str) -> int:
    """Runs :func:`read_everything` in a forked child; returns its verdict code,
    or ``-signal`` when the child died of a signal (an abort)."""
    pid = os.fork()
    if pid == 0:  # child
        code = TRACEBACK
        try:
            if read_everything(run_dir, scratch):
                code = DETECTED
            else:
                code = SILENT_SAME if content_digest(run_dir) == baseline else SILENT_DIFFERENT
        except BaseException:
            traceback.print_exc()
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def flip_positions(run_dir, n: int, seed: int):
    files = sorted(p for p in run_dir.iterdir() if p.is_file())
    sizes = [p.stat().st_size for p in files]
    rng = random.Random(seed)
    for _ in range(n):
        k = rng.choices(range(len(files)), weights=sizes)[0]
        yield files[k].name, rng.randrange(sizes[k]), rng.randrange(8)


def test_every_sampled_bit_flip_is_detected_without_traceback_or_abort(tmp_path):
    original = _record(tmp_path / "run")
    assert check_run(original).ok
    baseline = content_digest(original)
    verdicts: dict[int, list] = {}
    for name, byte, bit in flip_positions(original, 150, seed=22):
        work = tmp_path / "flipped"
        shutil.rmtree(work, ignore_errors=True)
        shutil.copytree(original, work)
        data = bytearray((work / name).read_bytes())
        data[byte] ^= 1 << bit
        (work / name).write_bytes(bytes(data))
        verdicts.setdefault(probe(work, tmp_path, baseline), []).append((name, byte, bit))
    assert set(verdicts) == {DETECTED}, {k: v[:5] for k, v in verdicts.items()}
    assert len(verdicts[DETECTED]) == 150


def test_repair_keeps_every_good_batch_and_checks_clean(tmp_path):
    original = _record(tmp_path / "run")
    before = RunReader(original).read_topic("lift__state")
    check = before.check
    victim = check.batches[1]
    path = original / "lift__state.arrow"
    data = bytearray(path.read_bytes())
    data[victim.offset + victim.length // 2] ^= 0x04
    path.write_bytes(bytes(data))
    report = check_run(original)
    assert not report.ok
    assert report.topics["lift__state"].bad_batches[0]["batch"] == 1
    assert any("lift__state: batch 1" in p for p in report.problems)
    after = RunReader(original).read_topic("lift__state")
    assert after.table.num_rows == before.table.num_rows - victim.rows
    repaired = tmp_path / "fixed"
    repair_run(original, repaired)
    fixed = check_run(repaired)
    assert fixed.ok, fixed.problems
    kept = RunReader(repaired).read_topic("lift__state").table
    assert kept.equals(after.table)
    assert RunReader(repaired).read_topic("cam__rgb").table.equals(RunReader(original).read_topic("cam__rgb").table)
    assert RunReader(repaired).manifest["topics"]["lift__state"]["count"] == kept.num_rows


def test_zero_byte_topic_file_is_a_mismatch_with_the_manifest(tmp_path):
    original = _record(tmp_path / "run")
    (original / "lift__state.arrow").write_bytes(b"")
    report = check_run(original)
    assert any("readable messages, manifest says 60" in p for p in report.problems)
    summary = summarize(RunReader(original))
    assert summary["manifest_mismatches"]["lift__state"] == {"readable": 0, "manifest": 60}


@pytest.mark.parametrize("junk", [b"", b"\x00" * 7, b"\xff" * 64])
def test_any_index_content_is_reported_not_raised(tmp_path, junk):
    original = _record(tmp_path / "run")
    (original / "cam__rgb.arrow.crc").write_bytes(junk)
    assert probe(original, tmp_path, content_digest(_record(tmp_path / "ref"))) == DETECTED
