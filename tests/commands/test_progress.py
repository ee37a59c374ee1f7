"""Progress of the CLI's long work: one rich bar on stderr, with the run's
message count as its total, drawn once at the end when stderr is no terminal."""

from __future__ import annotations

import re

import pytest

from teledora.cli import main
from teledora.commands._progress import recorded_total
from teledora.recording import RunReader
from tests.viewing_fixtures import COUNTS, write_view_run


def test_recorded_total_reads_the_manifest_counts():
    manifest = {"topics": {"a": {"count": 3}, "b": 4}}
    assert recorded_total(manifest) == 7
    assert recorded_total(manifest, ["b"]) == 4
    assert recorded_total({}) is None
    assert recorded_total({"topics": {"a": {"count": None}}}) is None
    assert recorded_total(manifest, ["missing"]) is None


def _bar(err: str, unit: str) -> tuple[int, int]:
    found = re.findall(rf"(\d+)/(\d+) {unit}", err)
    assert found, err
    done, total = found[-1]
    return int(done), int(total)


def test_mcap_export_shows_every_message_read(tmp_path, capsys):
    run = write_view_run(tmp_path / "run")
    assert main(["log", "export", str(run), "--format", "mcap", "-o", str(tmp_path / "x.mcap")]) == 0
    captured = capsys.readouterr()
    total = sum(COUNTS.values())
    assert RunReader(run).manifest["topics"] and _bar(captured.err, "messages") == (total, total)
    assert captured.out.startswith("wrote ")  # stdout as before
    assert len(captured.err.splitlines()) == 1


def test_view_shows_its_conversion_and_names_this_environment_s_rerun(tmp_path, capsys, monkeypatch):
    pytest.importorskip("rerun", reason="rerun-sdk is not installed (pip install -e '.[view]')")
    from teledora.commands.view import rerun_command

    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    run = write_view_run(tmp_path / "run")
    assert main(["view", str(run)]) == 0
    captured = capsys.readouterr()
    total = sum(COUNTS.values())
    assert _bar(captured.err, "messages") == (total, total)
    assert f"`{rerun_command()} {run / 'view.rrd'}`" in captured.out


def test_steps_reach_the_bar_in_batches_and_all_of_them_by_the_end(monkeypatch):
    from teledora.commands import _progress

    handed: list[int] = []
    real_advance = _progress.Progress.advance
    monkeypatch.setattr(_progress.Progress, "advance", lambda self, task, n: (handed.append(n), real_advance(self, task, n)))
    with _progress.progress("counting", 20000) as advance:
        for _ in range(20000):
            advance()
    assert sum(handed) == 20000
    assert len(handed) < 200  # ten a second at most, not one per step
