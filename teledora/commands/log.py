"""`teledora log`: look at a recorded run.

``teledora log info RUN`` prints the run's provenance and, per topic, the
message count, rate, span, size and any gaps the recorder can detect.
``teledora log export RUN --format mcap`` writes an MCAP file that Foxglove
opens in its 3D panel: frame transforms, the robot and room as scene
entities, scans, poses and camera images with the ``foxglove.*`` schemas,
plus one plain-data JSON channel per topic (``/node/output``); see
:mod:`teledora.recording.mcap_export` and docs/viewing.md.
``teledora log compare RUN OTHER`` compares two runs (a run and its replay)
topic by topic with byte-level digests. ``teledora log check RUN`` verifies
every batch against its checksum and the run against its manifest;
``teledora log repair RUN -o OUT`` writes a copy holding every good batch.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

from teledora.commands._progress import progress, recorded_total
from teledora.models.config_files import load_profile
from teledora.operators.errors import ConfigError
from teledora.operators.recording.recording_gaps import GAP_KINDS, GapDetector
from teledora.recording import RecordingError, RunFormatError, RunReader, value_digest
from teledora.recording.mcap_export import channel_schemas, export_mcap, foxglove_layout
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
    export.add_argument("--format", choices=["mcap", "lerobot"], default="mcap")
    export.add_argument("-o", "--output", type=Path, default=None,
                        help="output file (mcap; default RUN/run.mcap) or dataset root (lerobot; default RUN/lerobot)")
    export.add_argument("--topics", default=None, help="comma-separated topics (default all; mcap only)")
    export.add_argument("--fps", type=int, default=30, help="lerobot: frame clock (frames per second, default 30)")
    export.add_argument("--task", default="teleoperation",
                        help="lerobot: task text of episodes that carry none (and of a run without episode marks)")
    export.add_argument("--append", action="store_true", help="lerobot: add this run to the dataset already at the output")
    export.add_argument("--codec", default="libsvtav1", choices=["libsvtav1", "libx264"],
                        help="lerobot: video encoder (default libsvtav1, LeRobot's own default)")
    export.add_argument("--frames", default="auto", choices=["auto", "rendered", "recorded"],
                        help="lerobot: camera images rendered from the recorded states at each frame's time, or the "
                             "recorded images (default auto: rendered for a sim run, recorded otherwise)")
    export.add_argument("--render-size", default=None, metavar="WxH",
                        help="lerobot, rendered: image size of every camera (default each camera's configured size)")
    export.add_argument(
        "--profile", default=None, help="mcap: robot profile whose model draws the robot and room (default the shipped one)"
    )
    export.add_argument(
        "--layout", type=Path, default=None, help="mcap: also write a Foxglove layout (JSON) that shows the export in 3D"
    )
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
        "episodes": episode_summary(reader, start_ns, end_ns),
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
        "recorder_nice": m.get("recorder_nice"),
        "bytes": sum(t["bytes"] for t in topics.values()),
        "messages": seqs,
        "seq_missing": max_seq + 1 - seqs,
        "type_errors": m.get("type_errors") or {},
        "name_errors": m.get("name_errors") or {},
        "rejected": m.get("rejected") if isinstance(m.get("rejected"), dict) else {},
        "lag_ms": m.get("lag_ms"),
        "manifest_problem": reader.manifest_problem,
        "manifest_mismatches": mismatches,
        "topics": topics,
        "gaps": [
            {"topic": g.topic, "kind": g.kind, "start_ns": g.start_ns, "duration_s": g.duration_s, "missing": g.missing,
             "missing_exact": g.exact}
            for g in detector.gaps
        ],
    }


def episode_summary(reader: RunReader, start_ns: int | None, end_ns: int | None) -> dict[str, Any]:
    """The operator's episode marks and the episodes they make (docs/datasets.md)."""
    from teledora.operators.datasets.episodes import split_episodes
    from teledora.recording.lerobot_export import episode_marks

    marks = episode_marks(reader)
    if not marks or start_ns is None or end_ns is None:
        return {"marks": len(marks), "kept": [], "discarded": [], "ignored": 0}
    split = split_episodes(marks, start_ns, end_ns, "")

    def row(e):
        return {"start_s": (e.start_ns - start_ns) / 1e9, "duration_s": (e.end_ns - e.start_ns) / 1e9,
                "task": e.task, "closed_by": e.closed_by}

    return {"marks": len(marks), "kept": [row(e) for e in split.episodes], "discarded": [row(e) for e in split.discarded],
            "ignored": len(split.ignored)}


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
    nice = s.get("recorder_nice")
    if isinstance(nice, dict) and nice.get("before") is not None:
        raised = nice.get("after") is not None and nice["after"] < nice["before"]
        recorder += f"; recorder at nice {nice.get('after')}" + (f" (raised from {nice['before']})" if raised else " (not raised)")
    if s.get("ended_by") and s["ended_by"] != "end of stream":
        recorder += f"; ended by {s['ended_by']}"
    lines.append(recorder)
    lag = s.get("lag_ms")
    if isinstance(lag, dict) and lag.get("n"):
        lines.append(f"lag        recorder behind senders: median {lag.get('p50')} ms, p99 {lag.get('p99')} ms, max {lag.get('max')} ms")
    if s.get("manifest_problem"):
        lines.append(f"MANIFEST   {s['manifest_problem']}")
    for topic, entry in s.get("rejected", {}).items():  # refused at record time: arrived, never stored
        if isinstance(entry, dict):
            lines.append(f"REFUSED    {topic}: {entry.get('count')} message(s) not recorded (last: {entry.get('last')})")
    for topic, mm in s.get("manifest_mismatches", {}).items():
        lines.append(f"MISMATCH   {topic}: {mm['readable']} readable messages, manifest says {mm['manifest']}")
    corrupt = {t: v["corrupt_batches"] for t, v in s["topics"].items() if v.get("corrupt_batches")}
    for topic, batches in corrupt.items():
        lines.append(f"CORRUPT    {topic}: batch {', '.join(map(str, batches))} failed the checksum (skipped; run `teledora log check`)")
    ep = s.get("episodes") or {}
    if ep.get("marks"):
        lines.append(f"episodes   {len(ep['kept'])} kept, {len(ep['discarded'])} discarded, from {ep['marks']} marks"
                     + (f" ({ep['ignored']} ignored)" if ep.get("ignored") else ""))
        for e in ep["kept"]:
            lines.append(f"  kept      +{e['start_s']:.3f} s for {e['duration_s']:.3f} s  {e['task']!r} (ended by {e['closed_by']})")
        for e in ep["discarded"]:
            lines.append(f"  discarded +{e['start_s']:.3f} s for {e['duration_s']:.3f} s  {e['task']!r}")
    else:
        lines.append("episodes   none marked (an export takes the whole run as one episode)")
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
            missing = f"{g['missing']} missing (by its counter)" if g.get("missing_exact", True) else f"~{g['missing']} missing"
            lines.append(f"  {g['topic']}: {g['kind']} at +{at:.3f} s, {g['duration_s']:.3f} s, {missing}")
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
    for problem in report.problems:  # the run's own, not one topic's
        if problem != report.manifest_problem and not any(problem.startswith(f"{t}: ") for t in report.topics):
            print(f"run: {problem}")
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


def _export(args: argparse.Namespace) -> int:
    try:
        reader = RunReader(args.run)
    except RunFormatError as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    if args.format == "lerobot":
        return _export_lerobot(args)
    topics = [t.strip() for t in args.topics.split(",")] if args.topics else None
    unknown = sorted(set(topics or []) - set(reader.topics))
    if unknown:
        print(f"teledora log: no such topics {unknown} (have: {', '.join(reader.topics)})", file=sys.stderr)
        return 2
    output = args.output or (args.run / "run.mcap")
    try:
        profile = load_profile(args.profile)
    except (ConfigError, OSError) as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    skipped: list[str] = []
    with progress(f"exporting {output.name}", recorded_total(reader.manifest, topics)) as advance:
        counts = export_mcap(reader, output, topics, profile=profile, skipped=skipped, advance=advance)
    print(f"wrote {output}: {sum(counts.values())} messages on {len(counts)} channels")
    if skipped:
        print(f"skipped {len(skipped)} image frame(s) that are not valid images (first: {skipped[0]})")
    if args.layout is not None:
        args.layout.write_text(foxglove_layout(channel_schemas(output), profile.world_frame, profile.base_frame))
        print(f"wrote {args.layout}: import it in Foxglove (Layouts, Import from file) after opening {output.name}")
    return 0


def _finished_only(line: str) -> None:
    if line.startswith("encoded"):
        print(line, flush=True)


def _render_size(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise ValueError(f"--render-size {text!r} is not WIDTHxHEIGHT") from None
    if w <= 0 or h <= 0:
        raise ValueError(f"--render-size {text!r}: both sides must be positive")
    return w, h


def _needs_fresh_process() -> bool:
    """True when mujoco is already imported without a headless GL choice: its GL
    backend is fixed at import, so rendering must happen in a new process."""
    import os

    return ("mujoco" in sys.modules and not os.environ.get("MUJOCO_GL")
            and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")))


def _rerun_headless(args: argparse.Namespace) -> int:
    import os
    import subprocess

    argv = [sys.executable, "-m", "teledora.cli", "log", "export", str(args.run), "--format", "lerobot",
            "--fps", str(args.fps), "--task", args.task, "--codec", args.codec, "--frames", "rendered"]
    argv += ["-o", str(args.output)] if args.output else []
    argv += ["--render-size", args.render_size] if args.render_size else []
    argv += ["--append"] if args.append else []
    return subprocess.run(argv, env=dict(os.environ, MUJOCO_GL="egl")).returncode


def _export_lerobot(args: argparse.Namespace) -> int:
    import os

    from teledora.models.config_files import load_drive_config, load_profile, load_renderer_config
    from teledora.operators.datasets.lerobot_features import Units
    from teledora.recording.lerobot_export import ExportError, ExportOptions, export_run, is_sim_run

    if args.fps <= 0:
        print("teledora log: --fps must be positive", file=sys.stderr)
        return 2
    try:
        size = _render_size(args.render_size)
    except ValueError as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    render = args.frames == "rendered" or (args.frames == "auto" and is_sim_run(RunReader(args.run)))
    if render and _needs_fresh_process():
        return _rerun_headless(args)
    opts = ExportOptions(
        fps=args.fps,
        default_task=args.task,
        robot_type="alohamini2",
        units=Units(gripper_closed_rad=load_drive_config().arms.gripper_closed_rad),
        lift_travel_mm=load_profile().lift.travel_mm,
        vcodec=args.codec,
    )
    root = args.output or (args.run / "lerobot")
    renderer = None
    try:
        if render:
            os.environ.setdefault("MUJOCO_GL", "egl")  # headless; before mujoco is first imported
            from teledora.devices.rendering.offline_render import OfflineRenderError, RecordedStateRenderer

            try:
                renderer = RecordedStateRenderer(RunReader(args.run), load_renderer_config(), load_profile(), size=size)
            except OfflineRenderError as exc:
                print(f"teledora log: cannot render the cameras: {exc} (--frames recorded uses the recorded images)",
                      file=sys.stderr)
                return 2
        what = "rendering and encoding camera videos" if render else "encoding camera videos"
        with progress(what, None, "frames") as advance:
            # the bar shows the encoding; of the export's own lines only the finished cameras are kept
            report = export_run(args.run, root, opts, append=args.append, advance=advance, progress=_finished_only,
                                renderer=renderer)
    except ExportError as exc:
        print(f"teledora log: {exc}", file=sys.stderr)
        return 2
    finally:
        if renderer is not None:
            renderer.close()
    if report.whole_run:
        print("no episode marks in this run: exported the whole run as one episode")
    for ep in report.episodes:
        print(f"episode {ep['episode_index']}: {ep['frames']} frames, task {ep['task']!r} (ended by {ep['closed_by']})")
    if report.discarded:
        print(f"{report.discarded} discarded episode(s) left out")
    for cam, (count, first) in report.skipped_frames.items():
        print(f"camera {cam}: skipped {count} frame(s) that are not valid images of its size (first: {first})")
    if report.ignored_marks:
        print(f"{report.ignored_marks} episode mark(s) ignored (keep/discard with no episode open)")
    if renderer is not None:
        print(f"rendered {len(report.cameras)} camera(s) at each frame's time from the recorded states: "
              f"{report.render_frames} images in {report.render_s:.1f} s ({report.render_frames_per_s:.1f} frames/s)")
        if renderer.rejected:
            print(f"{renderer.rejected} recorded state(s) rejected and not used (first: {renderer.first_rejection})")
    for r in report.frame_reuse:
        print(f"episode {r['episode_index']} camera {r['camera']}: {r['frames']} frames, {r['repeated']} repeat the "
              f"previous image, {r['missing']} missing (before its first image), {r['unused']} image(s) unused")
    rate = report.frames / report.seconds if report.seconds > 0 else float("inf")
    print(f"wrote {root}: {report.frames} frames ({report.recording_s:.1f} s of recording at {args.fps} fps), "
          f"{len(report.cameras)} camera(s), in {report.seconds:.1f} s ({rate:.0f} frames/s)")
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
