"""`teledora episode`: mark episodes in the running dataflow from the command line.

``teledora episode start --task "pick up the red cube"`` starts an episode (an
open one is kept first), ``teledora episode keep`` stops it and keeps it,
``teledora episode discard`` stops it and throws it away. The request goes to
the ``episodes`` node over UDP on 127.0.0.1 (``--port``, the dataflow's
``episodes`` node argument); the node records the mark like a headset chord.
"""

from __future__ import annotations

import argparse
import sys

from teledora.devices.xr.episode_requests import DEFAULT_PORT, send_request


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("episode", help="start, keep or discard an episode in the running dataflow",
                              description=__doc__)
    p.add_argument("action", choices=["start", "keep", "discard"])
    p.add_argument("--task", default=None, help="task text (start only; default: the node's current task)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the episodes node's UDP port (default {DEFAULT_PORT})")
    p.add_argument("--timeout-s", type=float, default=2.0, help="how long to wait for the node's answer")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.task is not None and args.action != "start":
        print("teledora episode: --task goes with start", file=sys.stderr)
        return 2
    request = {"event": args.action} | ({"task": args.task} if args.task is not None else {})
    try:
        reply = send_request(request, args.port, args.timeout_s)
    except TimeoutError as exc:
        print(f"teledora episode: {exc}", file=sys.stderr)
        return 1
    if not reply.get("ok"):
        print(f"teledora episode: refused: {reply.get('error')}", file=sys.stderr)
        return 1
    state = f"episode open, task {reply.get('task')!r}" if reply.get("open") else "no episode open"
    print(f"{args.action}: done ({state})")
    return 0
