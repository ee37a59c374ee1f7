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

from teledora.devices.viewing.rerun_sink import ViewerUnavailable, open_viewer, require_rerun


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("view", help="open a recorded run in the Rerun viewer (writes RUN/view.rrd)")
    p.add_argument("run", type=Path, help="run directory")
    p.add_argument("--save", type=Path, default=None, help="only write the Rerun recording to this .rrd file")
    p.add_argument("--config", default=None, help="viewer config (default: the shipped alohamini2/viewer.yaml)")
    p.set_defaults(func=_view)


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
    mapper = ViewMapper(config, load_robot_binding(load_renderer_config(), models.load_profile()))
    output = args.save or (args.run / "view.rrd")
    result = convert_run(reader, mapper, output, recording_id=args.run.resolve().name)
    print(f"teledora view: {result.messages} messages read, {result.shown} shown"
          f" ({result.items} items, {result.invalid} invalid skipped) -> {output}")
    if args.save is None:
        how = open_viewer(output)
        print("teledora view: Rerun viewer started" if how == "spawned" else f"teledora view: {how}")
    return 0
