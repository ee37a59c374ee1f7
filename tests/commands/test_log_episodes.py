"""`teledora log info` lists the operator's episode marks and the episodes they make."""

from __future__ import annotations

from teledora.cli import build_parser
from teledora.commands import log
from teledora.recording import RunReader

from tests.recording.teleop_run import write_teleop_run


def test_info_lists_kept_and_discarded_episodes(tmp_path, capsys):
    run = write_teleop_run(tmp_path / "r", duration_s=2.0, marks=[(0.2, "start", "pick"), (0.9, "keep", ""),
                                                                    (1.0, "start", "place"), (1.5, "discard", ""),
                                                                    (1.6, "keep", "")])
    s = log.summarize(RunReader(run))
    ep = s["episodes"]
    assert ep["marks"] == 5 and ep["ignored"] == 1
    assert [(e["task"], e["closed_by"]) for e in ep["kept"]] == [("pick", "keep")]
    assert [e["task"] for e in ep["discarded"]] == ["place"]
    args = build_parser().parse_args(["log", "info", str(run)])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "episodes   1 kept, 1 discarded, from 5 marks (1 ignored)" in out
    assert "'pick' (ended by keep)" in out


def test_info_says_when_no_episode_was_marked(tmp_path, capsys):
    run = write_teleop_run(tmp_path / "r", duration_s=0.5)
    args = build_parser().parse_args(["log", "info", str(run)])
    assert args.func(args) == 0
    assert "none marked (an export takes the whole run as one episode)" in capsys.readouterr().out
