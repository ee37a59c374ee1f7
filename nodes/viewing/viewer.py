"""viewer node: the running robot in Rerun (robot, scans, trajectories, cameras, plots).

Optional: `teledora demo --view` / `teledora run DATAFLOW --view` add it to the
dataflow they start (teledora.operators.dataflow.viewer_node); the shipped
dataflows do not contain it. Each input is named ``<node>__<output>`` like the
recorder's and is read latest-only: dora keeps one queued message per input
(``queue_size: 1``, dropping the older), and of a burst the node shows only the
newest per input, so a slow viewer loses frames, never holds back a sender.
viewer.yaml bounds how often each stream class is drawn.

Output (``output:`` in viewer.yaml, or ``--output``): a native Rerun viewer
(``spawn``), the web viewer on this machine (``serve``), or an .rrd file
(``save``: ``$TELEDORA_RUN_DIR/viewer.rrd``, else ``--rrd``); ``auto`` spawns
when a display exists and saves otherwise. Outputs: ``diagnostics`` only
(``dropped`` counts messages skipped for newer ones).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora import models
from teledora.devices.viewing.rerun_sink import RerunSink, ViewerUnavailable, has_display, log_message
from teledora.devices.viewing.robot_model import load_robot_binding
from teledora.models.config_files import load_renderer_config, load_viewer_config
from teledora.operators.viewing.view_mapping import ViewMapper
from teledora.runtime.event_stream import data_inputs
from teledora.runtime.node_io import NodeIO, make_node, node_id


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="viewer", description=__doc__.splitlines()[0])
    p.add_argument("--config", default=None, help="viewer config (default: the shipped alohamini2/viewer.yaml)")
    p.add_argument("--output", choices=("auto", "spawn", "serve", "save"), default=os.environ.get("TELEDORA_VIEWER_OUTPUT"))
    p.add_argument("--rrd", default=None, help="file for output save (default: $TELEDORA_RUN_DIR/viewer.rrd)")
    return p.parse_args(argv)


def rrd_path(arg: str | None) -> Path:
    if arg:
        return Path(arg)
    run_dir = os.environ.get("TELEDORA_RUN_DIR")
    return Path(run_dir) / "viewer.rrd" if run_dir else Path("viewer.rrd")


def start_output(sink: Any, output: str, rrd: Path, grpc_port: int, web_port: int) -> str:
    """Connects ``sink`` as configured; returns a line saying where to look."""
    if output == "auto":
        output = "spawn" if has_display() else "save"
    if output == "spawn":
        sink.spawn()
        return "viewer: streaming to a native Rerun viewer window"
    if output == "serve":
        return f"viewer: open {sink.serve(grpc_port, web_port)} in a browser"
    rrd.parent.mkdir(parents=True, exist_ok=True)
    sink.save(rrd)
    return f"viewer: no display, saving the live view to {rrd} (open it with `rerun {rrd}`)"


def main(argv: Sequence[str] | None = None, node: Any = None, *, sink: Any = None,
         clock: Callable[[], int] = time.time_ns) -> ViewMapper:
    """Runs the node until its inputs end; returns the mapper (its counts).
    Tests inject ``node`` and a ``sink`` (then nothing is spawned or saved)."""
    args = parse_args(argv)
    node = make_node(node)
    io = NodeIO(node, node_id("viewer"), clock=clock)
    try:
        config = load_viewer_config(args.config)
        profile = models.load_profile()
        mapper = ViewMapper(config, load_robot_binding(load_renderer_config(), profile), profile.base_frame)
        if sink is None:
            sink = RerunSink("teledora", recording_id=Path(os.environ.get("TELEDORA_RUN_DIR", "live")).name)
            io.log("info", start_output(sink, args.output or config.output, rrd_path(args.rrd), config.grpc_port,
                                        config.web_port))
    except (ValueError, OSError, ViewerUnavailable) as exc:
        io.fail_start("viewer", exc)
    sink.log_static(mapper.static_items())
    latest_only = set(data_inputs())
    try:
        while (batch := io.next_batch(1.0)) is not None:
            inputs = [e for e in batch if e.get("type") == "INPUT"]
            events = io.newest(inputs, latest_only or {e["id"] for e in inputs})
            io.diag.dropped += len(inputs) - len(events)
            for event in events:
                show(io, mapper, sink, event, clock)
            io.diag.details = {"cpu_s": round(time.process_time(), 3), "shown": sum(mapper.counts.shown.values()),
                               "decimated": sum(mapper.counts.skipped.values())}
            io.publish_diagnostics()
        io.publish_diagnostics(force=True)
    finally:
        sink.close()
    return mapper


def show(io: NodeIO, mapper: ViewMapper, sink: Any, event: Any, clock: Callable[[], int]) -> None:
    """Maps one input event and logs its items (an invalid message is counted and skipped)."""
    io.diag.received += 1
    if log_message(mapper, sink, event["id"], event["value"], event.get("metadata") or {}, clock()) == "invalid":
        io.reject(f"input {event.get('id')!r}: breaks the message contract")


if __name__ == "__main__":
    main()
