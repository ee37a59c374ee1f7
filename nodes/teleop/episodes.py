"""episodes node: the operator's episode marks, from the headset and the command line.

Inputs: ``controllers`` (XrControllers: the left X+Y chord starts or keeps an
episode, the right A+B chord discards it, and the headset page's episode
buttons arrive as its ``ui_episode_*`` levels; operators/teleop/episode_marker.py).
The dataflows wire it to ``xr/buttons``, the reports at which a level changes
(and one a second): they hold every edge the marker acts on, at about 1 Hz
instead of 90 (operators/xr/level_changes.py); ``xr/controllers`` works the same.
``tick`` (dora timer, polls the request socket).
Outputs: ``marks`` (EpisodeMark, one per start / keep / discard), ``state``
(EpisodeState: open or not, task, episode number, armed discard; on every
change and at least once a second, for the headset page), ``diagnostics``.

Requests from ``teledora episode start|keep|discard`` arrive as UDP datagrams on
127.0.0.1:``--port`` (teledora/devices/xr/episode_requests.py); a port already
taken leaves the node running on chords alone (reported in its diagnostics).

Args: ``--task`` (task text until a request sets one), ``--port`` (0: no requests),
``--config`` (teleop.yaml: ``episodes.discard_confirm_s``, how long the page's
armed discard waits for its confirmation; ``--discard-confirm-s`` overrides it).

Env: TELEDORA_EPISODE_TASK, when set, replaces ``--task`` (`teledora demo
--script` names the task of the scenario it plays).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from teledora.devices.xr.episode_requests import DEFAULT_PORT, EpisodeRequestSocket
from teledora.models.config_files import load_node_profile, load_teleop_config
from teledora.operators.teleop.episode_marker import EpisodeMarker

#: The state goes out on every change, and at least this often (a page that
#: connects late learns it within this long).
STATE_EVERY_NS = 1_000_000_000
from teledora.runtime.node_io import NodeIO, make_node, node_id


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="episodes", description=__doc__.splitlines()[0])
    ap.add_argument("--task", default="teleoperation", help="task text of episodes until a request sets another")
    ap.add_argument("--port", type=int, default=DEFAULT_PORT, help="UDP port for episode requests (0: none)")
    ap.add_argument("--config", type=Path, default=None, help="teleop YAML (default: shipped alohamini2/teleop.yaml)")
    ap.add_argument("--discard-confirm-s", type=float, default=None, help="overrides episodes.discard_confirm_s of teleop.yaml")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None, node: Any = None, clock: Callable[[], int] = time.time_ns) -> None:
    args = parse_args(argv)
    io = NodeIO(make_node(node), node_id("episodes"), clock)
    try:
        confirm_s = load_teleop_config(args.config, load_node_profile()).episodes.discard_confirm_s
    except (OSError, ValueError) as exc:
        io.fail_start("episodes", exc)
    if args.discard_confirm_s is not None:
        confirm_s = args.discard_confirm_s
    marker = EpisodeMarker(os.environ.get("TELEDORA_EPISODE_TASK") or args.task, confirm_s)
    requests = None
    if args.port:
        try:
            requests = EpisodeRequestSocket(args.port)
        except OSError as exc:
            io.log("warn", f"episode requests off: port {args.port}: {exc}")
            io.diag.details["requests"] = f"off: {exc}"

    def handle(request: dict[str, Any]) -> dict[str, Any]:
        event, task = request.get("event"), request.get("task")
        if task is not None and not isinstance(task, str):
            return {"ok": False, "error": "task must be a string"}
        try:
            done = marker.request(str(event), io.now(), task)
        except ValueError as exc:
            return {"ok": False, "error": str(exc)}
        if not done:
            return {"ok": False, "error": marker.refused[-1], "open": marker.open}
        return {"ok": True, "open": marker.open, "task": marker.task}

    last_state: dict[str, Any] | None = None
    last_state_ns = 0
    try:
        while (batch := io.next_batch()) is not None:
            for event in io.newest(batch, {"tick"}):
                if event["type"] != "INPUT":
                    continue
                if event["id"] == "controllers":
                    msg = io.decode(event, "XrControllers")
                    if msg is not None:
                        marker.on_controllers(msg, io.now())
                elif event["id"] != "tick":
                    io.reject(f"unexpected input {event['id']!r}")
            if requests is not None:
                requests.serve(handle)
            for mark in marker.take_marks():
                io.send("marks", "EpisodeMark", mark)
                io.log("info", f"episode {mark['event']}: {mark['task']!r}")
            now = io.now()
            state = marker.state(now)
            held = {k: v for k, v in state.items() if k != "stamp_ns"}
            if held != last_state or now - last_state_ns >= STATE_EVERY_NS:
                io.send("state", "EpisodeState", state)
                last_state, last_state_ns = held, now
            io.diag.details.update(open=marker.open, task=marker.task, refused=len(marker.refused))
            io.publish_diagnostics()
    finally:
        if requests is not None:
            requests.close()
    io.publish_diagnostics(force=True)


if __name__ == "__main__":
    main()
