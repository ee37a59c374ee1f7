"""Verifying a run directory, and repairing one by keeping every good batch.

:func:`check_run` checks each topic file against its checksum index and the
run against its manifest (counts, topics, the closing marker of a complete
run) and lists every finding by topic and batch; :func:`repair_run` writes a
new run directory from the batches that pass their checksum. Neither hands
unverified bytes to Arrow, so no byte pattern can abort them.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from teledora.operators.recording.batch_checksums import END_OF_STREAM, SCHEMA_ROWS, crc32, index_record
from teledora.recording.run_dir import INDEX_SUFFIX, MANIFEST_NAME, TOPIC_SUFFIX, RecordingError, write_manifest
from teledora.recording.run_reader import RunReader, map_file


@dataclass
class TopicReport:
    """What :func:`check_run` found for one topic."""

    topic: str
    rows: int = 0  # rows in batches that passed their checksum
    manifest_count: int | None = None
    batches: int = 0
    bad_batches: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # a killed run's torn end: loss, not corruption
    verified: bool = True  # False: a format-1 file, no checksums to check

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "manifest_count": self.manifest_count,
            "batches": self.batches,
            "bad_batches": self.bad_batches,
            "problems": self.problems,
            "notes": self.notes,
            "verified": self.verified,
        }


@dataclass
class RunReport:
    """What :func:`check_run` found for a run; ``ok`` when nothing is wrong."""

    run: str
    complete: bool
    manifest_problem: str
    topics: dict[str, TopicReport]
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        return {
            "run": self.run,
            "ok": self.ok,
            "complete": self.complete,
            "manifest_problem": self.manifest_problem,
            "problems": self.problems,
            "topics": {t: r.as_dict() for t, r in self.topics.items()},
        }


def _manifest_counts(manifest: dict[str, Any]) -> dict[str, int | None]:
    topics = manifest.get("topics")
    if not isinstance(topics, dict):
        return {}
    out: dict[str, int | None] = {}
    for topic, entry in topics.items():
        count = entry.get("count") if isinstance(entry, dict) else None
        out[str(topic)] = count if isinstance(count, int) and not isinstance(count, bool) else None
    return out


def check_run(run_dir: str | os.PathLike[str]) -> RunReport:
    """Checks every topic file against its checksums and the run against its
    manifest. Findings name the topic and, for corruption, the batch number
    (0 = the file's first record batch; -1 = its schema)."""
    reader = RunReader(run_dir)
    complete = reader.complete
    problems: list[str] = []
    if reader.manifest_problem:
        problems.append(reader.manifest_problem)
    if not (reader.run_dir / MANIFEST_NAME).exists():
        # topic files alone say neither what was meant to be recorded nor whether the run was closed
        problems.append(f"no {MANIFEST_NAME}: not a run the recorder started, or its manifest was lost")
    counts = _manifest_counts(reader.manifest)
    reports: dict[str, TopicReport] = {}
    on_disk = set(reader.topics)
    for topic in sorted(on_disk | set(counts)):
        report = TopicReport(topic, manifest_count=counts.get(topic))
        reports[topic] = report
        if topic not in on_disk:
            report.problems.append(f"manifest lists {counts.get(topic)} messages but the file is missing")
        else:
            _check_topic(reader, topic, report, complete)
        problems += [f"{topic}: {p}" for p in report.problems]
    return RunReport(str(reader.run_dir), complete, reader.manifest_problem, reports, problems)


def _check_topic(reader: RunReader, topic: str, report: TopicReport, complete: bool) -> None:
    try:
        table = reader.read_topic(topic)
    except (RecordingError, OSError) as exc:
        report.problems.append(f"unreadable: {exc}")
        return
    report.rows = table.table.num_rows
    report.batches = table.batches
    check = table.check
    if check is None:
        report.verified = False
        if reader.checksummed:
            report.problems.append("no checksum index")
    else:
        for problem in check.problems:
            report.problems.append(problem)
        ending = check.end_findings()
        (report.notes if not complete else report.problems).extend(ending)
        last = len(check.batches) - 1
        for bad in table.bad_batches:
            if check.torn and not complete and bad.batch == last:
                continue  # the torn last batch of a killed run, noted above
            where = "schema" if bad.batch < 0 else f"batch {bad.batch}"
            rows = f", {bad.rows} rows" if bad.rows is not None else ""
            span = f", bytes {bad.offset}..{bad.offset + bad.length}" if bad.offset is not None and bad.length is not None else ""
            report.bad_batches.append({"batch": bad.batch, "rows": bad.rows, "offset": bad.offset, "length": bad.length, "problem": bad.problem})
            report.problems.append(f"{where}{rows}{span}: {bad.problem}")
        if complete and not check.closed and not check.tail_bytes:
            report.problems.append("run is complete but the file lacks its end-of-stream marker")
    expected = report.manifest_count
    if expected is None:
        if reader.manifest and not reader.manifest_problem and complete:
            report.problems.append("topic missing from the manifest")
    elif complete and report.rows != expected:
        report.problems.append(f"{report.rows} readable messages, manifest says {expected}")
    elif not complete and report.rows < expected:
        report.problems.append(f"{report.rows} readable messages, manifest says at least {expected}")


def repair_run(run_dir: str | os.PathLike[str], out_dir: str | os.PathLike[str]) -> RunReport:
    """Writes ``out_dir``: a copy of the run holding every batch that passed
    its checksum (byte for byte, with a fresh index), every file closed, and
    a manifest whose counts are the kept rows (``repaired_from`` names the
    source, ``repair`` lists what was dropped). Returns the check of the
    source run. Refuses to write into an existing run directory."""
    src = Path(run_dir)
    dst = Path(out_dir)
    if (dst / MANIFEST_NAME).exists() or any(dst.glob(f"*{TOPIC_SUFFIX}")):
        raise RecordingError(f"{dst} already holds a run; repair writes a new directory")
    report = check_run(src)
    reader = RunReader(src)
    dst.mkdir(parents=True, exist_ok=True)
    manifest = dict(reader.manifest)
    topics: dict[str, Any] = {}
    dropped: dict[str, Any] = {}
    for topic in reader.topics:
        table = reader.read_topic(topic)
        check = table.check
        path = src / f"{topic}{TOPIC_SUFFIX}"
        if check is None:
            shutil.copyfile(path, dst / path.name)  # format 1: nothing to verify, copied as is
            topics[topic] = {"count": table.table.num_rows, "type": str(table.value_type)}
            continue
        if check.schema is None or not check.schema.ok:
            dropped[topic] = {"schema": "corrupt", "batches": len(check.batches)}
            continue
        data = map_file(path)
        messages = [check.schema] + check.good_batches
        rows = 0
        with open(dst / path.name, "wb") as f, open(dst / (path.name + INDEX_SUFFIX), "wb") as idx:
            offset = 0
            for pos, msg in enumerate(messages):
                chunk = bytes(memoryview(data)[msg.offset : msg.offset + msg.length])
                f.write(chunk)
                idx.write(index_record(pos, offset, len(chunk), SCHEMA_ROWS if pos == 0 else int(msg.rows or 0), crc32(chunk)))
                offset += len(chunk)
                rows += 0 if pos == 0 else int(msg.rows or 0)
            f.write(END_OF_STREAM)
        topics[topic] = {"count": rows, "type": str(table.value_type)}
        bad = [b.batch for b in check.bad_batches]
        if bad or check.tail_bytes or check.torn:
            dropped[topic] = {"batches": bad, "tail_bytes": check.tail_bytes, "torn_last_batch": check.torn}
    manifest["topics"] = topics
    manifest["repaired_from"] = str(src.resolve())
    manifest["repair"] = {"dropped": dropped, "problems": report.problems}
    manifest["complete"] = True
    manifest["format_version"] = 2
    write_manifest(dst, manifest)
    return report
