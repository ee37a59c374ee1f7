"""`teledora view RUN`: a recorded run in the Rerun viewer, on its own timeline.

Converts the run's recorded topics to ``RUN/view.rrd`` (robot, scans,
trajectories, cameras, plots, diagnostics: docs/viewing.md) and opens it in
Rerun's native viewer when a display exists; otherwise prints how to open it.
``--save FILE`` only writes the recording.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from teledora.commands._progress import progress, recorded_total
from teledora.devices.viewing.rerun_sink import ViewerUnavailable, open_viewer, require_rerun


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("view", help="open a recorded run in the Rerun viewer (writes RUN/view.rrd)")
    p.add_argument("run", type=Path, help="run directory")
    p.add_argument("--save", type=Path, default=None, help="only write the Rerun recording to this .rrd file")
    p.add_argument("--config", default=None, help="viewer config (default: the shipped alohamini2/viewer.yaml)")
    p.set_defaults(func=_view)


def rerun_command() -> str:
    """How to start this environment's Rerun viewer, said the same by every
    command: the ``rerun`` next to this Python, else ``python -m rerun``."""
    local = Path(sys.executable).parent / "rerun"
    return str(local) if local.exists() else f"{sys.executable} -m rerun"


class _Counted:
    """The run's reader, advancing a progress bar for each message the conversion reads."""

    def __init__(self, reader, advance) -> None:
        self._reader, self._advance = reader, advance

    def __getattr__(self, name: str):
        return getattr(self._reader, name)

    def iter_sent(self, *args, **kwargs):
        for msg in self._reader.iter_sent(*args, **kwargs):
            self._advance(1)
            yield msg


def _view(args: argparse.Namespace) -> int:
    try:
        require_rerun()
    except ViewerUnavailable as exc:
        print(f"teledora view: {exc}", file=sys.stderr)
        return 2
    from teledora import models
    from teledora.devices.viewing.robot_model import load_robot_binding
    from teledora.devices.viewing.run_conversion import convert_run
    from teledora.models.config_files import load_renderer_config, load_viewer_config
    from teledora.operators.viewing.view_mapping import ViewMapper
    from teledora.recording.run_dir import RunFormatError
    from teledora.recording.run_reader import RunReader

    try:
        reader = RunReader(args.run)
    except (RunFormatError, OSError, ValueError) as exc:
        print(f"teledora view: {args.run} is not a readable run: {exc}", file=sys.stderr)
        return 2
    config = load_viewer_config(args.config)
    profile = models.load_profile()
    mapper = ViewMapper(config, load_robot_binding(load_renderer_config(), profile), profile.base_frame)
    output = args.save or (args.run / "view.rrd")
    with progress(f"converting to {output.name}", recorded_total(reader.manifest)) as advance:
        result = convert_run(_Counted(reader, advance), mapper, output, recording_id=args.run.resolve().name)
    print(f"teledora view: {result.messages} messages read, {result.shown} shown"
          f" ({result.items} items, {result.invalid} invalid skipped) -> {output}")
    if args.save is None:
        if open_viewer(output) == "spawned":
            print("teledora view: Rerun viewer started")
        else:
            rerun = rerun_command()
            print(f"teledora view: no display: open it with `{rerun} {output}` on a machine with one, "
                  f"or in a browser with `{rerun} --web-viewer {output}`")
    return 0
