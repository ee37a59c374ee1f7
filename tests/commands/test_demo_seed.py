"""`teledora demo --seed/--episodes`: refused where they mean nothing, before anything runs."""

from __future__ import annotations

import pytest

from teledora.cli import main as cli


@pytest.mark.parametrize("argv, reason", [
    (["--seed", "3"], "go with --script pick-place"),
    (["--script", "pick-place", "--episodes", "4"], "needs --seed"),
    (["--script", "pick-place", "--seed", "-1"], ">= 0"),
    (["--script", "pick-place", "--seed", "1", "--episodes", "0"], ">= 1"),
])
def test_seed_and_episodes_refused_out_of_place(argv, reason, tmp_path, capsys) -> None:
    assert cli(["demo", *argv, "--runs-dir", str(tmp_path)]) == 2
    assert reason in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
