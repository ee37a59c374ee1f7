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
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="teledora", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"teledora {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"teledora.commands.{info.name}")
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
