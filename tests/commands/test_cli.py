"""The `teledora` front door: a named command builds only its own module's
parser (so `log info` starts without mink and the other commands' libraries), and the whole CLI still
lists every command."""

from __future__ import annotations

import json
import subprocess
import sys

from teledora import cli


def _subcommands(parser) -> set[str]:
    action = next(a for a in parser._actions if a.dest == "command")
    return set(action.choices)


def test_every_module_registers_the_command_it_is_found_by():
    full = _subcommands(cli.build_parser())
    assert {"demo", "run", "log", "replay", "path", "view"} <= full
    for command in full:
        assert cli._named_command([command, "--help"]) == command
        assert command in _subcommands(cli.build_parser(command)), command


def test_options_first_or_an_unknown_word_build_the_whole_cli():
    assert cli._named_command(["--version"]) is None
    assert cli._named_command([]) is None
    assert cli._named_command(["no-such-command"]) is None


def test_a_log_command_does_not_import_the_ik_or_other_commands():
    code = ("import sys, json; from teledora import cli; cli.build_parser('log'); "
            "print(json.dumps(sorted(m for m in ('mink', 'teledora.operators.ik.cartesian_path', 'teledora.commands.path') if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []
    code_all = code.replace("cli.build_parser('log')", "cli.build_parser()")
    out = subprocess.run([sys.executable, "-c", code_all], capture_output=True, text=True, check=True)
    assert "mink" in json.loads(out.stdout)  # the check can see an import: the whole CLI does pull mink in
