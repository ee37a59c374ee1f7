"""The `teledora` command: the front door to the project's tools.

Each subcommand lives in its own module under ``teledora/commands/`` and
exposes ``add_parser(subparsers)``, which registers the subcommand and sets
``func`` on its parser. Modules are discovered, so adding a command is adding
a file; a module whose name starts with ``_`` is a helper the commands share.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from teledora import __version__

from teledora import commands

# commands registered by a module of another name
_MODULE_OF = {"run": "demo"}


def command_modules() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole CLI, or with ``only`` the one module that registers that
    command: a command then starts without importing every other command's
    libraries (MuJoCo, mink, the exporters: seconds on a small machine)."""
    parser = argparse.ArgumentParser(prog="teledora", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"teledora {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    names = command_modules()
    if only is not None:
        names = [_MODULE_OF.get(only, only)]
    for name in names:
        module = importlib.import_module(f"teledora.commands.{name}")
        module.add_parser(subparsers)
    return parser


def _named_command(argv: list[str]) -> str | None:
    """The command ``argv`` names, when a module registers it (else None: the whole CLI is built)."""
    first = next((a for a in argv if not a.startswith("-")), None)
    if first is None or argv[0].startswith("-"):
        return None
    return first if _MODULE_OF.get(first, first) in command_modules() else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_named_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
