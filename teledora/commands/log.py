"""`teledora log`: look at a recorded run.

``teledora log info RUN`` prints the run's provenance and, per topic, the
message count, rate, span, size and any gaps the recorder can detect.
``teledora log export RUN --format mcap`` writes an MCAP file that Foxglove
and ROS 2 tooling open: one channel per topic (``/node/output``), messages
JSON-encoded with a JSON schema, images as ``foxglove.RawImage``.
``teledora log compare RUN OTHER`` compares two runs (a run and its replay)
topic by topic with byte-level digests. ``teledora log check RUN`` verifies
every batch against its checksum and the run against its manifest;
``teledora log repair RUN -o OUT`` writes a copy holding every good batch.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import math
import sys
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa

from teledora.operators.contract.messages import IMAGE_ENCODINGS, SCHEMAS
from teledora.operators.recording.recording_gaps import GAP_KINDS, GapDetector
from teledora.recording import RecordedMessage, RecordingError, RunFormatError, RunReader, message_time_ns, value_digest
from teledora.recording.run_check import check_run, repair_run

COUNTER_METADATA_KEY = "seq"
MAX_GAPS_LISTED = 20


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("log", help="inspect or export a recorded run")
    sub = p.add_subparsers(dest="log_command", metavar="ACTION")
    info = sub.add_parser("info", help="topics, counts, rates, duration and gaps of a run")
    info.add_argument("run", type=Path)
    info.add_argument("--json", action="store_true", help="print the summary as JSON")
    info.set_defaults(func=_info)
    export = sub.add_parser("export", help="write the run in another format")
    export.add_argument("run", type=Path)
    export.add_argument("--format", choices=["mcap"], default="mcap")
    export.add_argument("-o", "--output", type=Path, default=None, help="output file (default RUN/run.mcap)")
    export.add_argument("--topics", default=None, help="comma-separated topics (default all)")
    export.set_defaults(func=_export)
    compare = sub.add_parser("compare", help="compare two runs message by message (SHA-256 of the Arrow bytes)")
    compare.add_argument("run", type=Path)
    compare.add_argument("other", type=Path)
    compare.add_argument("--topics", default=None, help="comma-separated topics (default: those in both runs)")
    compare.set_defaults(func=_compare)
    check = sub.add_parser("check", help="verify every batch's checksum and the run against its manifest")
    check.add_argument("run", type=Path)
    check.add_argument("--json", action="store_true", help="print the report as JSON")
    check.set_defaults(func=_check)
    repair = sub.add_parser("repair", help="write a copy of a run keeping every batch that passes its checksum")
    repair.add_argument("run", type=Path)
    repair.add_argument("-o", "--output", type=Path, default=None, help="new run directory (default RUN.repaired)")
    repair.set_defaults(func=_repair)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


# --------------------------------------------------------------------------- info


def summarize(reader: RunReader) -> dict[str, Any]:
    """Provenance and per-topic statistics of a run, as plain data."""
    detector = GapDetector()
    manifest_counts = _manifest_counts(reader.manifest)
    topics: dict[str, Any] = {}
    seqs = 0
    max_seq = -1
    first_all: int | None = None
    last_all: int | None = None
    for topic in reader.topics:
        read = reader.read_topic(topic)
        table = read.table
        n = table.num_rows
        entry: dict[str, Any] = {
            "count": n,
            "manifest_count": manifest_counts.get(topic),
            "type": str(read.value_type) if read.value_type is not None else None,
            "bytes": (reader.run_dir / f"{topic}.arrow").stat().st_size,
            "truncated": read.truncated,
            "corrupt_batches": [b.batch for b in read.bad_batches],
            "checksums": read.check is not None,
        }
        if n:
            dora = table.column("dora_ns").to_pylist()
            recv = table.column("recv_ns").to_pylist()
            times = [d if d is not None else r for d, r in zip(dora, recv)]
            counters = [_counter(m) for m in table.column("metadata").to_pylist()]
            for t, c in zip(times, counters):
                detector.observe(topic, t, c)
            span_s = (times[-1] - times[0]) / 1e9
            entry.update(
                first_ns=times[0],
                last_ns=times[-1],
                rate_hz=(n - 1) / span_s if span_s > 0 else None,
                stamped=n - table.column("stamp_ns").null_count,
            )
            seq_col = table.column("seq").to_pylist()
            seqs += n
            max_seq = max(max_seq, max(seq_col))
            first_all = times[0] if first_all is None else min(first_all, times[0])
            last_all = times[-1] if last_all is None else max(last_all, times[-1])
        entry["gaps"] = {k: sum(1 for g in detector.gaps if g.topic == topic and g.kind == k) for k in GAP_KINDS}
        topics[topic] = entry
    m = reader.manifest
    mismatches = {}
    for topic in sorted(set(topics) | set(manifest_counts)):
        have = topics[topic]["count"] if topic in topics else None
        want = manifest_counts.get(topic)
        if want is None or have is None:
            if reader.complete and have != want and not reader.manifest_problem:
                mismatches[topic] = {"readable": have, "manifest": want}
        elif have != want if reader.complete else have < want:
            mismatches[topic] = {"readable": have, "manifest": want}
    start_ns = m.get("start_ns") or first_all
    end_ns = m.get("end_ns") or last_all
    return {
        "run": str(reader.run_dir),
        "complete": reader.complete,
        "start_ns": start_ns,
        "end_ns": end_ns,
        "duration_s": (end_ns - start_ns) / 1e9 if start_ns and end_ns else None,
        "dataflow": m.get("dataflow_path"),
        "git": m.get("git"),
        "replay_of": m.get("replay_of"),
        "flush_interval_s": m.get("flush_interval_s"),
        "ended_by": m.get("ended_by"),
        "recorder_cpu_s": m.get("recorder_cpu_s"),
        "bytes": sum(t["bytes"] for t in topics.values()),
        "messages": seqs,
        "seq_missing": max_seq + 1 - seqs,
        "type_errors": m.get("type_errors") or {},
        "name_errors": m.get("name_errors") or {},
        "lag_ms": m.get("lag_ms"),
        "manifest_problem": reader.manifest_problem,
        "manifest_mismatches": mismatches,
        "topics": topics,
        "gaps": [
            {"topic": g.topic, "kind": g.kind, "start_ns": g.start_ns, "duration_s": g.duration_s, "missing": g.missing}
            for g in detector.gaps
        ],
    }


def _manifest_counts(manifest: dict[str, Any]) -> dict[str, int]:
    topics = manifest.get("topics")
    if not isinstance(topics, dict):
        return {}
    out = {}
    for topic, entry in topics.items():
        count = entry.get("count") if isinstance(entry, dict) else None
        if isinstance(count, int) and not isinstance(count, bool):
            out[str(topic)] = count
    return out


def _counter(metadata_text: str | None) -> int | None:
    try:
        value = json.loads(metadata_text or "{}").get(COUNTER_METADATA_KEY)
    except (json.JSONDecodeError, AttributeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _iso(ns: int | None) -> str:
    if not ns:
        return "-"
    return dt.datetime.fromtimestamp(ns / 1e9, dt.timezone.utc).isoformat(timespec="milliseconds")


def format_summary(s: dict[str, Any]) -> str:
    """The summary as the text `log info` prints."""
    lines = [f"run        {s['run']}"]
    state = "complete" if s["complete"] else "INCOMPLETE (recorder did not close it: crash or kill; data up to the last flush)"
    lines.append(f"state      {state}")
    lines.append(f"start      {_iso(s['start_ns'])}")
    lines.append(f"end        {_iso(s['end_ns'])}")
    duration = f"{s['duration_s']:.3f} s" if s["duration_s"] is not None else "-"
    lines.append(f"duration   {duration}")
    if s.get("dataflow"):
        lines.append(f"dataflow   {s['dataflow']}")
    git = s.get("git") or {}
    if git.get("commit"):
        lines.append(f"git        {git['commit'][:12]}{' (dirty)' if git.get('dirty') else ''}")
    if s.get("replay_of"):
        lines.append(f"replay of  {s['replay_of']}")
    lines.append(f"messages   {s['messages']} on {len(s['topics'])} topics; missing sequence numbers: {s['seq_missing']}")
    recorder = f"size       {s['bytes'] / 1e6:.1f} MB"
    if s.get("recorder_cpu_s") is not None and s["duration_s"]:
        recorder += f"; recorder CPU {s['recorder_cpu_s']:.1f} s ({100 * s['recorder_cpu_s'] / s['duration_s']:.0f} % of a core)"
    if s.get("ended_by") and s["ended_by"] != "end of stream":
        recorder += f"; ended by {s['ended_by']}"
    lines.append(recorder)
    lag = s.get("lag_ms")
    if isinstance(lag, dict) and lag.get("n"):
        lines.append(f"lag        recorder behind senders: median {lag.get('p50')} ms, p99 {lag.get('p99')} ms, max {lag.get('max')} ms")
    if s.get("manifest_problem"):
        lines.append(f"MANIFEST   {s['manifest_problem']}")
    for topic, mm in s.get("manifest_mismatches", {}).items():
        lines.append(f"MISMATCH   {topic}: {mm['readable']} readable messages, manifest says {mm['manifest']}")
    corrupt = {t: v["corrupt_batches"] for t, v in s["topics"].items() if v.get("corrupt_batches")}
    for topic, batches in corrupt.items():
        lines.append(f"CORRUPT    {topic}: batch {', '.join(map(str, batches))} failed the checksum (skipped; run `teledora log check`)")
    lines.append("")
    header = f"{'topic':<30} {'count':>8} {'rate Hz':>9} {'MiB':>9}  gaps (stall/counter/back)  type"
    lines.append(header)
    for topic, t in s["topics"].items():
        rate = f"{t['rate_hz']:.1f}" if t.get("rate_hz") else "-"
        gaps = "/".join(str(t["gaps"][k]) for k in GAP_KINDS)
        flag = (" TORN" if t["truncated"] else "") + (" CORRUPT" if t.get("corrupt_batches") else "")
        type_text = (t["type"] or "?")
        type_text = type_text if len(type_text) <= 40 else type_text[:37] + "..."
        lines.append(f"{topic:<30} {t['count']:>8} {rate:>9} {t['bytes'] / 2**20:>9.2f}  {gaps:<25}  {type_text}{flag}")
    if s["gaps"]:
        lines.append("")
        lines.append("gaps:")
        for g in s["gaps"][:MAX_GAPS_LISTED]:
            at = (g["start_ns"] - s["start_ns"]) / 1e9 if s["start_ns"] else 0.0
            lines.append(f"  {g['topic']}: {g['kind']} at +{at:.3f} s, {g['duration_s']:.3f} s, ~{g['missing']} missing")
        if len(s["gaps"]) > MAX_GAPS_LISTED:
            lines.append(f"  ... {len(s['gaps']) - MAX_GAPS_LISTED} more")
    return "\n".join(lines)


def _check(args: argparse.Namespace) -> int:
    try:
        report = check_run(args.run)
    except RunFormatError as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0 if report.ok else 1
    state = "complete" if report.complete else "INCOMPLETE"
    for topic, t in report.topics.items():
        tag = "ok" if not t.problems else "BAD"
        if not t.verified:
            tag += " (no checksums)"
        print(f"{topic:<30} {t.rows:>8} rows in {t.batches:>5} good batches  manifest {t.manifest_count}  {tag}")
        for problem in t.problems:
            print(f"    {problem}")
        for note in t.notes:
            print(f"    note: {note}")
    if report.manifest_problem:
        print(f"manifest: {report.manifest_problem}")
    verdict = "OK" if report.ok else f"{len(report.problems)} problems"
    print(f"{report.run}: {state}, {verdict}")
    return 0 if report.ok else 1


def _repair(args: argparse.Namespace) -> int:
    out = args.output or args.run.with_name(args.run.name + ".repaired")
    try:
        report = repair_run(args.run, out)
    except RecordingError as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    for problem in report.problems:
        print(f"dropped or noted: {problem}")
    print(f"repaired run written to {out} ({len(report.problems)} problems in the source)")
    return 0


def _info(args: argparse.Namespace) -> int:
    try:
        summary = summarize(RunReader(args.run))
    except RunFormatError as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0


# --------------------------------------------------------------------------- MCAP


def json_schema(arrow_type: pa.DataType) -> dict[str, Any]:
    """A JSON Schema for values of ``arrow_type`` as :func:`to_json_value` writes them."""
    if pa.types.is_struct(arrow_type):
        return {
            "type": "object",
            "properties": {arrow_type.field(i).name: json_schema(arrow_type.field(i).type) for i in range(arrow_type.num_fields)},
        }
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type) or pa.types.is_fixed_size_list(arrow_type):
        return {"type": "array", "items": json_schema(arrow_type.value_type)}
    if pa.types.is_boolean(arrow_type):
        return {"type": "boolean"}
    if pa.types.is_integer(arrow_type):
        return {"type": "integer"}
    if pa.types.is_floating(arrow_type):
        return {"type": ["number", "null"], "description": "null stands for NaN or +/-Inf"}
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return {"type": "string"}
    return {"type": "string", "description": f"arrow {arrow_type}"}


def _finite(obj: Any) -> Any:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_finite(v) for v in obj]
    if isinstance(obj, (bytes, bytearray)):
        return base64.b64encode(obj).decode()
    return obj


def _is_bytes(arrow_type: pa.DataType) -> bool:
    return arrow_type in (pa.uint8(), pa.int8())


def to_json_value(value: pa.Array) -> Any:
    """A recorded value as JSON data: a length-1 struct becomes one object,
    a byte array ``{"data": base64}``, anything else ``{"data": [...]}``.
    Non-finite floats become null."""
    if pa.types.is_struct(value.type) and len(value) == 1:
        return _finite(value.to_pylist()[0])
    if _is_bytes(value.type):
        return {"data": base64.b64encode(value.to_numpy(zero_copy_only=False).tobytes()).decode()}
    return {"data": _finite(value.to_pylist())}


RAW_IMAGE_SCHEMA = {
    "title": "foxglove.RawImage",
    "type": "object",
    "properties": {
        "timestamp": {"type": "object", "properties": {"sec": {"type": "integer"}, "nsec": {"type": "integer"}}},
        "frame_id": {"type": "string"},
        "width": {"type": "integer"},
        "height": {"type": "integer"},
        "encoding": {"type": "string"},
        "step": {"type": "integer"},
        "data": {"type": "string", "contentEncoding": "base64"},
    },
}


def _is_image(msg: RecordedMessage) -> bool:
    if msg.value.type != pa.uint8():
        return False
    meta = json.loads(msg.metadata or "{}")
    return {"width", "height", "encoding"} <= set(meta) and meta["encoding"] in IMAGE_ENCODINGS


def raw_image(msg: RecordedMessage) -> dict[str, Any]:
    """A recorded image as a foxglove.RawImage JSON object."""
    meta = json.loads(msg.metadata or "{}")
    stamp = msg.stamp_ns if msg.stamp_ns is not None else message_time_ns(msg)
    width = int(meta["width"])
    return {
        "timestamp": {"sec": stamp // 1_000_000_000, "nsec": stamp % 1_000_000_000},
        "frame_id": str(meta.get("camera", msg.node)),
        "width": width,
        "height": int(meta["height"]),
        "encoding": meta["encoding"],
        "step": width * IMAGE_ENCODINGS[meta["encoding"]],
        "data": base64.b64encode(msg.value.to_numpy(zero_copy_only=True).tobytes()).decode(),
    }


def _schema_for(msg: RecordedMessage) -> tuple[str, dict[str, Any]]:
    if _is_image(msg):
        return "foxglove.RawImage", RAW_IMAGE_SCHEMA
    for kind, struct in SCHEMAS.items():
        if msg.value.type == struct:
            return f"teledora.msgs.{kind}", {"title": kind, **json_schema(struct)}
    name = f"teledora.{msg.topic}"
    if pa.types.is_struct(msg.value.type):
        return name, {"title": name, **json_schema(msg.value.type)}
    if _is_bytes(msg.value.type):
        data_schema: dict[str, Any] = {"type": "string", "contentEncoding": "base64"}
    else:
        data_schema = json_schema(pa.list_(msg.value.type))
    return name, {"title": name, "type": "object", "properties": {"data": data_schema}}


def export_mcap(reader: RunReader, output: Path, topics: Iterable[str] | None = None) -> dict[str, int]:
    """Writes the run (or ``topics`` of it) to an MCAP file; returns per-topic counts."""
    from mcap.writer import Writer

    chosen = reader.topics if topics is None else list(topics)
    counts: dict[str, int] = {}
    channels: dict[str, int] = {}
    schemas: dict[str, int] = {}
    with open(output, "wb") as f:
        writer = Writer(f)
        writer.start(profile="", library="teledora")
        m = reader.manifest
        writer.add_metadata(
            "teledora.run",
            {k: str(m.get(k)) for k in ("start_ns", "end_ns", "complete", "dataflow_path", "replay_of")}
            | {"git": json.dumps(m.get("git")), "packages": json.dumps(m.get("packages"))},
        )
        for msg in reader.iter_messages(chosen):
            if msg.topic not in channels:
                name, schema = _schema_for(msg)
                if name not in schemas:
                    schemas[name] = writer.register_schema(name, "jsonschema", json.dumps(schema).encode())
                node, output_id = reader.sources().get(msg.topic, (msg.node, msg.output))
                channels[msg.topic] = writer.register_channel(f"/{node}/{output_id}", "json", schemas[name])
                counts[msg.topic] = 0
            body = raw_image(msg) if _is_image(msg) else to_json_value(msg.value)
            writer.add_message(
                channels[msg.topic],
                log_time=msg.recv_ns,
                data=json.dumps(body, separators=(",", ":")).encode(),
                publish_time=message_time_ns(msg),
                sequence=msg.seq % 2**32,
            )
            counts[msg.topic] += 1
        writer.finish()
    return counts


def _export(args: argparse.Namespace) -> int:
    try:
        reader = RunReader(args.run)
    except RunFormatError as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    topics = [t.strip() for t in args.topics.split(",")] if args.topics else None
    unknown = sorted(set(topics or []) - set(reader.topics))
    if unknown:
        print(f"teledora log: no such topics {unknown} (have: {', '.join(reader.topics)})", file=sys.stderr)
        return 2
    output = args.output or (args.run / "run.mcap")
    counts = export_mcap(reader, output, topics)
    print(f"wrote {output}: {sum(counts.values())} messages on {len(counts)} channels")
    return 0


# --------------------------------------------------------------------------- compare


def compare_topic(a: RunReader, b: RunReader, topic: str) -> dict[str, Any]:
    """How one topic of two runs compares: counts, whether the digest sequences
    are identical, and, matching messages by ``stamp_ns``, how many agree."""
    da = [(m.stamp_ns, value_digest(m.value)) for m in a.iter_topic(topic)]
    db = [(m.stamp_ns, value_digest(m.value)) for m in b.iter_topic(topic)]
    by_a, by_b = dict(da), dict(db)
    common = set(by_a) & set(by_b) - {None}
    return {
        "count": len(da),
        "other_count": len(db),
        "identical": [d for _, d in da] == [d for _, d in db],
        "common_stamps": len(common),
        "equal_at_common_stamps": sum(by_a[s] == by_b[s] for s in common),
    }


def _compare(args: argparse.Namespace) -> int:
    try:
        a, b = RunReader(args.run), RunReader(args.other)
    except RunFormatError as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    topics = [t.strip() for t in args.topics.split(",")] if args.topics else sorted(set(a.topics) & set(b.topics))
    missing = sorted(t for t in topics if t not in a.topics or t not in b.topics)
    if missing:
        print(f"teledora log: topics missing from a run: {missing}", file=sys.stderr)
        return 2
    print(f"{'topic':<30} {'count':>7} {'other':>7}  identical  equal/common by stamp_ns")
    all_identical = True
    for topic in topics:
        c = compare_topic(a, b, topic)
        all_identical &= c["identical"]
        print(
            f"{topic:<30} {c['count']:>7} {c['other_count']:>7}  {'yes' if c['identical'] else 'NO':<9}  "
            f"{c['equal_at_common_stamps']}/{c['common_stamps']}"
        )
    only = sorted(set(a.topics) ^ set(b.topics))
    if only and not args.topics:
        print(f"in one run only: {', '.join(only)}")
    return 0 if all_identical else 1
