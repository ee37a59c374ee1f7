"""`teledora log info` and `teledora log export --format mcap`."""

from __future__ import annotations

import json
import re

import numpy as np
import pyarrow as pa
import pytest
from mcap.reader import make_reader

from teledora.cli import build_parser
from teledora.commands import log
from teledora.operators.contract.messages import encode, image_metadata
from teledora.recording import RunReader, RunWriter

T0 = 1_800_000_000_000_000_000
MS = 1_000_000


def lift(i: int) -> pa.StructArray:
    return encode("LiftState", {"stamp_ns": T0 + i * 20 * MS, "height_m": 0.01 * i, "velocity_m_s": 0.0, "homed": True})


def scan() -> pa.StructArray:
    n = 4
    return encode(
        "LaserScan",
        {
            "stamp_ns": T0, "frame_id": "lidar_front", "angle_min": 0.0, "angle_max": 1.5, "angle_increment": 0.5,
            "time_increment": 0.0, "scan_time": 0.1, "range_min": 0.15, "range_max": 12.0,
            "ranges": [1.0, float("inf"), 2.0, 3.0], "intensities": [0.0] * n,
        },
    )


IMG = np.arange(4 * 3 * 3, dtype=np.uint8)


def write_run(path, close: bool = True) -> RunReader:
    w = RunWriter(path, {"dataflow_path": "sim.yml", "git": {"commit": "abc123", "dirty": False}}, start_ns=T0)
    for i in range(30):  # 50 Hz, then a 1 s silence before the last one
        t = T0 + i * 20 * MS + (1000 * MS if i == 29 else 0)
        w.append("lift__state", lift(i), {"seq": i + (3 if i >= 10 else 0)}, recv_ns=t)
    meta = image_metadata(width=4, height=3, encoding="rgb8", camera="chest", stamp_ns=T0 + 5, fx=1, fy=1, cx=2, cy=1.5)
    w.append("renderer__chest", pa.array(IMG), meta, recv_ns=T0 + 7)
    w.append("lidar_front__scan", scan(), {}, recv_ns=T0 + 9)
    w.append("raw__blob", pa.array([1.5, float("nan")]), {}, recv_ns=T0 + 11)
    if close:
        w.close(T0 + 2000 * MS)
    else:
        w.flush(T0 + 1)
    return RunReader(path)


def test_summary_counts_rates_and_gaps(tmp_path):
    s = log.summarize(write_run(tmp_path / "r"))
    assert s["complete"] and s["messages"] == 33 and s["seq_missing"] == 0
    assert s["duration_s"] == pytest.approx(2.0)
    lift_stats = s["topics"]["lift__state"]
    assert lift_stats["count"] == 30 and lift_stats["stamped"] == 30
    assert lift_stats["rate_hz"] == pytest.approx(29 / 1.58)
    assert lift_stats["gaps"] == {"stall": 1, "counter": 1, "backwards": 0}
    assert [g["kind"] for g in s["gaps"]] == ["counter", "stall"]
    assert s["topics"]["renderer__chest"]["count"] == 1 and s["topics"]["renderer__chest"]["rate_hz"] is None


def test_info_text_flags_incomplete_runs(tmp_path, capsys):
    write_run(tmp_path / "r", close=False)
    args = build_parser().parse_args(["log", "info", str(tmp_path / "r")])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "INCOMPLETE" in out and "lift__state" in out and "git        abc123" in out
    assert "lift__state: stall" in out
    assert "size       0.0 MB" in out


def test_info_json(tmp_path, capsys):
    write_run(tmp_path / "r")
    args = build_parser().parse_args(["log", "info", str(tmp_path / "r"), "--json"])
    assert args.func(args) == 0
    assert json.loads(capsys.readouterr().out)["topics"]["lidar_front__scan"]["count"] == 1


def test_info_on_a_non_run_fails_cleanly(tmp_path, capsys):
    args = build_parser().parse_args(["log", "info", str(tmp_path)])
    assert args.func(args) == 2
    assert "teledora log:" in capsys.readouterr().err


def read_mcap(path):
    """[(schema name, channel, log time, publish time, JSON body or None)] of an MCAP file."""
    with open(path, "rb") as f:
        reader = make_reader(f)
        return [
            (s.name, c.topic, m.log_time, m.publish_time, json.loads(m.data) if c.message_encoding == "json" else None)
            for s, c, m in reader.iter_messages()
        ]


def test_export_mcap_channels_schemas_and_payloads(tmp_path, capsys):
    write_run(tmp_path / "r")
    out = tmp_path / "r.mcap"
    layout = tmp_path / "layout.json"
    args = build_parser().parse_args(["log", "export", str(tmp_path / "r"), "--format", "mcap", "-o", str(out), "--layout", str(layout)])
    assert args.func(args) == 0
    panels = json.loads(layout.read_text())["content"]["items"]
    three_d = panels[0]["content"]
    assert three_d["panelType"] == "ThreeDee" and three_d["config"]["fixedFrame"] == "world"
    assert set(three_d["config"]["topics"]) == {"/foxglove/robot", "/foxglove/room", "/foxglove/lidar_front/scan"}
    image = panels[1]["content"]["items"][0]["content"]["config"]["imageMode"]
    assert image["imageTopic"] == "/foxglove/renderer/chest" and image["calibrationTopic"] == "/foxglove/renderer/chest/calib"
    # 33 plain-data messages; /tf: 1 static + 30 lift states; robot and room; the
    # image also compressed and calibrated; the scan also as foxglove.LaserScan
    assert "69 messages on 10 channels" in capsys.readouterr().out
    rows = read_mcap(out)
    by_topic = {}
    for name, topic, log_time, publish_time, body in rows:
        by_topic.setdefault(topic, []).append((name, log_time, body))
    assert sorted(by_topic) == [
        "/foxglove/lidar_front/scan", "/foxglove/renderer/chest", "/foxglove/renderer/chest/calib", "/foxglove/robot",
        "/foxglove/room", "/lidar_front/scan", "/lift/state", "/raw/blob", "/renderer/chest", "/tf",
    ]
    name, log_time, body = by_topic["/lift/state"][3]
    assert name == "teledora.msgs.LiftState" and body["height_m"] == pytest.approx(0.03) and log_time == T0 + 60 * MS
    assert body["stamp_ns"] == str(T0 + 60 * MS)  # exact: a string, not a double
    assert by_topic["/renderer/chest"][0][0] == "foxglove.RawImage"
    assert by_topic["/foxglove/renderer/chest/calib"][0][0] == "foxglove.CameraCalibration"
    assert by_topic["/lidar_front/scan"][0][2]["ranges"] == [1.0, "inf", 2.0, 3.0]
    assert by_topic["/raw/blob"][0][2] == {"data": [1.5, "nan"]}
    assert len(by_topic["/tf"]) == 31 and {r[0] for r in by_topic["/tf"]} == {"foxglove.FrameTransforms"}


def test_export_subset_and_unknown_topic(tmp_path, capsys):
    write_run(tmp_path / "r")
    out = tmp_path / "s.mcap"
    counts = log.export_mcap(RunReader(tmp_path / "r"), out, ["renderer__chest"])
    assert {k: v for k, v in counts.items() if "chest" in k} == {
        "/renderer/chest": 1, "/foxglove/renderer/chest": 1, "/foxglove/renderer/chest/calib": 1,
    }
    args = build_parser().parse_args(["log", "export", str(tmp_path / "r"), "--topics", "nope"])
    assert args.func(args) == 2
    assert "no such topics" in capsys.readouterr().err


def test_compare_reports_identical_and_differing_topics(tmp_path, capsys):
    write_run(tmp_path / "a")
    w = RunWriter(tmp_path / "b", start_ns=T0)
    for i in range(30):
        w.append("lift__state", lift(i), {}, recv_ns=T0 + i)
    w.append("lidar_front__scan", encode("LiftCommand", {"stamp_ns": T0, "velocity_m_s": 1.0}), {}, recv_ns=T0)
    w.close(T0 + 1)
    args = build_parser().parse_args(["log", "compare", str(tmp_path / "a"), str(tmp_path / "b")])
    assert args.func(args) == 1  # the scan differs
    out = capsys.readouterr().out
    assert re.search(r"lift__state\s+30\s+30\s+yes\s+30/30", out)
    assert re.search(r"lidar_front__scan\s+1\s+1\s+NO\s+0/1", out)
    assert "in one run only: raw__blob, renderer__chest" in out
    args = build_parser().parse_args(["log", "compare", str(tmp_path / "a"), str(tmp_path / "b"), "--topics", "lift__state"])
    assert args.func(args) == 0


def _run_cli(*argv):
    args = build_parser().parse_args(list(argv))
    return args.func(args)


def test_check_passes_a_clean_run_and_names_topic_and_batch_of_a_corrupt_one(tmp_path, capsys):
    write_run(tmp_path / "r")
    assert _run_cli("log", "check", str(tmp_path / "r")) == 0
    assert "complete, OK" in capsys.readouterr().out
    check = RunReader(tmp_path / "r").read_topic("lift__state").check
    path = tmp_path / "r" / "lift__state.arrow"
    data = bytearray(path.read_bytes())
    data[check.batches[0].offset + 40] ^= 0x01
    path.write_bytes(bytes(data))
    assert _run_cli("log", "check", str(tmp_path / "r")) == 1
    out = capsys.readouterr().out
    assert "batch 0, 30 rows" in out and "checksum mismatch" in out and "lift__state" in out
    assert _run_cli("log", "info", str(tmp_path / "r")) == 0
    out = capsys.readouterr().out
    assert "CORRUPT    lift__state: batch 0" in out and "MISMATCH   lift__state: 0 readable messages, manifest says 30" in out
    assert _run_cli("log", "check", str(tmp_path / "r"), "--json") == 1
    report = json.loads(capsys.readouterr().out)
    assert report["topics"]["lift__state"]["bad_batches"][0]["batch"] == 0


def test_repair_writes_a_clean_copy_and_never_overwrites(tmp_path, capsys):
    write_run(tmp_path / "r")
    (tmp_path / "r" / "raw__blob.arrow.crc").write_bytes(b"\x00" * 5)  # index torn to junk
    assert _run_cli("log", "repair", str(tmp_path / "r"), "-o", str(tmp_path / "fixed")) == 0
    assert _run_cli("log", "check", str(tmp_path / "fixed")) == 0
    fixed = RunReader(tmp_path / "fixed")
    assert fixed.read_topic("lift__state").table.num_rows == 30
    assert "raw__blob" not in fixed.topics  # its schema could not be verified
    assert fixed.manifest["repair"]["dropped"]["raw__blob"]["schema"] == "corrupt"
    assert _run_cli("log", "repair", str(tmp_path / "r"), "-o", str(tmp_path / "fixed")) == 2


@pytest.mark.parametrize("nice, shown", [({"before": 10, "after": 0}, "recorder at nice 0 (raised from 10)"),
                                         ({"before": 0, "after": 0}, "recorder at nice 0 (not raised)")])
def test_info_says_whether_the_recorder_raised_its_priority(tmp_path, capsys, nice, shown):
    w = RunWriter(tmp_path / "r", {"recorder_nice": nice}, start_ns=T0)
    w.append("lift__state", lift(0), {"seq": 0}, recv_ns=T0)
    w.close(T0 + 1000 * MS)
    args = build_parser().parse_args(["log", "info", str(tmp_path / "r")])
    assert args.func(args) == 0
    assert shown in capsys.readouterr().out


def test_check_fails_a_run_without_a_manifest(tmp_path, capsys):
    write_run(tmp_path / "r")
    (tmp_path / "r" / "manifest.json").unlink()
    assert _run_cli("log", "check", str(tmp_path / "r")) == 1
    out = capsys.readouterr().out
    assert "no manifest.json" in out and "OK" not in out.splitlines()[-1]
    assert _run_cli("log", "check", str(tmp_path / "r"), "--json") == 1
    assert any("no manifest.json" in p for p in json.loads(capsys.readouterr().out)["problems"])


@pytest.mark.parametrize("what", ["empty", "other files", "a file", "missing"])
def test_check_fails_on_what_is_not_a_run(tmp_path, capsys, what):
    target = tmp_path / "x"
    if what == "a file":
        target.write_text("hello")
    elif what != "missing":
        target.mkdir()
        if what == "other files":
            (target / "notes.txt").write_text("not a recording")
    assert _run_cli("log", "check", str(target)) == 2
    assert "teledora log:" in capsys.readouterr().err


def test_info_lists_the_messages_the_recorder_refused(tmp_path, capsys):
    w = RunWriter(tmp_path / "r", {}, start_ns=T0)
    w.append("lift__state", lift(0), {}, recv_ns=T0)
    w.reject("cam__chest", "input 'cam__chest': image size 4 x -1 is not two positive integers")
    w.reject("cam__chest", "input 'cam__chest': no value (None)")
    w.close(T0 + MS)
    assert _run_cli("log", "info", str(tmp_path / "r")) == 0
    assert "REFUSED    cam__chest: 2 message(s) not recorded (last: input 'cam__chest': no value (None))" in capsys.readouterr().out
    assert log.summarize(RunReader(tmp_path / "r"))["rejected"]["cam__chest"]["count"] == 2
