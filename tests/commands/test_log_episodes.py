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


def test_the_command_renders_a_sim_export_headless_from_a_plain_shell(tmp_path):
    """From a shell with no MUJOCO_GL and no display the command line has
    imported mujoco before it knows it will render: it renders in a fresh
    process with headless GL instead of failing."""
    import os
    import subprocess
    import sys

    from tests.recording.sim_run import write_sim_run

    run = write_sim_run(tmp_path / "run", duration_s=1.0)
    env = {k: v for k, v in os.environ.items() if k not in ("MUJOCO_GL", "DISPLAY", "WAYLAND_DISPLAY")}
    proc = subprocess.run([sys.executable, "-m", "teledora.cli", "log", "export", str(run), "--format", "lerobot",
                           "-o", str(tmp_path / "ds"), "--codec", "libx264", "--render-size", "32x24"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "rendered 5 camera(s)" in proc.stdout
