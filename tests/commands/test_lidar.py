"""`teledora lidar` against the pty fake A1."""

from __future__ import annotations

import json
from pathlib import Path

from teledora import models
from teledora.cli import build_parser
from teledora.fakes.rplidar_a1 import FakeRplidarA1  # noqa: E402


def _config(tmp_path) -> Path:
    cfg = models.load_yaml("alohamini2/lidar.yaml")
    cfg["hardware"].update(read_timeout_s=2.0, stop_settle_s=0.1)
    path = tmp_path / "lidar.yaml"
    path.write_text(json.dumps(cfg))
    return path


def test_check_prints_info_and_turns(tmp_path):
    lines: list[str] = []
    with FakeRplidarA1(scan_rate_hz=10.0, samples_per_second=4000.0) as fake:
        args = build_parser().parse_args(["lidar", "--port", fake.port, "--config", str(_config(tmp_path)), "--turns", "2"])
        rc = args.func(args, out=lines.append)
    assert rc == 0
    assert "model 0x18, firmware 1.29" in lines[0] and "health good" in lines[0]
    assert [ln.split(":")[0] for ln in lines[1:3]] == ["turn 1", "turn 2"]
    assert "nearest" in lines[1] and lines[-1].startswith("ok:")


def test_check_fails_clearly_on_a_missing_port(tmp_path):
    lines: list[str] = []
    args = build_parser().parse_args(["lidar", "--port", str(tmp_path / "nope"), "--config", str(_config(tmp_path))])
    assert args.func(args, out=lines.append) == 1
    assert "cannot open" in lines[-1]
