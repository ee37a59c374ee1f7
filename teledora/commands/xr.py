"""``teledora xr``: tools for the XR feed.

``teledora xr send-udp FILE`` replays a recorded JSON-lines feed (one frame per
line, the format of docs/xr.md) to the ``xr`` UDP node, keeping the recorded
timing from each frame's ``sent_ns`` (or ``--rate-hz``). Frames are re-stamped
with the current clock (their pose and input ages kept) and a fresh session,
so the node sees them as live. The sender first pairs with the node (an
authenticated hello that the node answers with its run's nonce) and each frame
goes out in the feed's envelope: the nonce, a random sender session, a
sequence number and an HMAC-SHA256 with the node's pairing token (``--token``
or XR_UDP_TOKEN). When the node restarts, the sender pairs again.

``teledora xr record-udp FILE`` listens where the node would (127.0.0.1:9870 by
default; stop the node first), answers hellos as the node does, and writes the
frame of every datagram that verifies with the token as one line, until
``--seconds``/``--count`` or Ctrl-C. Datagrams that do not verify and invalid
frames are counted and skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Iterator

from teledora.devices.xr.udp_feed import PairingFailed, UdpFeedBackend, UdpFeedSender
from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.xr_feed_format import FeedFormatError, parse_frame


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    xr = subparsers.add_parser("xr", help="XR feed tools (UDP replay)")
    sub = xr.add_subparsers(dest="xr_command", metavar="XR_COMMAND")
    send = sub.add_parser("send-udp", help="replay a recorded JSON-lines XR feed over UDP")
    send.add_argument("file", type=Path, help="JSON-lines file, one feed frame per line")
    send.add_argument("--host", default="127.0.0.1")
    send.add_argument("--port", type=int, default=9870)
    send.add_argument("--speed", type=float, default=1.0, help="replay speed factor (2 = twice as fast)")
    send.add_argument("--rate-hz", type=float, default=None, help="fixed rate instead of the recorded timing")
    send.add_argument("--loop", action="store_true", help="repeat the file until interrupted")
    send.add_argument("--token", default=None, help="the node's pairing token (default: XR_UDP_TOKEN)")
    send.add_argument("--pair-timeout-s", type=float, default=5.0,
                      help="give up when the node sends no welcome within this long")
    send.set_defaults(func=send_udp)
    rec = sub.add_parser("record-udp", help="record an XR feed from a UDP bridge to JSON lines")
    rec.add_argument("file", type=Path, help="output JSON-lines file")
    rec.add_argument("--bind", default="127.0.0.1")
    rec.add_argument("--port", type=int, default=9870)
    rec.add_argument("--seconds", type=float, default=None, help="stop after this long")
    rec.add_argument("--count", type=int, default=None, help="stop after this many frames")
    rec.add_argument("--token", default=None, help="the senders' pairing token (default: XR_UDP_TOKEN)")
    rec.set_defaults(func=record_udp)
    xr.set_defaults(func=lambda args: xr.print_help() or 2)


def load_frames(path: Path) -> list[dict]:
    """Reads and validates a recording; raises FeedFormatError naming the bad line."""
    frames = []
    with path.open() as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            try:
                parse_frame(line.strip())
            except FeedFormatError as exc:
                raise FeedFormatError(exc.reason, f"{path}:{lineno}: {exc}") from None
            frames.append(json.loads(line))
    if not frames:
        raise FeedFormatError("schema", f"{path}: no frames")
    return frames


def restamped(frames: list[dict], speed: float, rate_hz: float | None, start_ns: int, session: str, seq0: int) -> Iterator[tuple[int, dict]]:
    """(send time, frame) pairs on the host clock, ages relative to sent_ns kept."""
    t0 = frames[0]["sent_ns"]
    for i, fr in enumerate(frames):
        rel = i * 1e9 / rate_hz if rate_hz else (fr["sent_ns"] - t0) / speed
        at = start_ns + int(rel)
        out = json.loads(json.dumps(fr))
        shift = at - fr["sent_ns"]
        out.update(session=session, seq=seq0 + i, sent_ns=at)
        for hand in out["hands"].values():
            for key in ("pose_ns", "input_ns"):
                if key in hand:
                    hand[key] += shift
        yield at, out


def _token(args: argparse.Namespace, command: str) -> str | None:
    token = args.token or os.environ.get("XR_UDP_TOKEN")
    if not token:
        print(f"teledora xr {command}: the UDP feed is authenticated: give the node's pairing token with --token "
              "or XR_UDP_TOKEN", file=sys.stderr)
    return token


def send_udp(args: argparse.Namespace) -> int:
    token = _token(args, "send-udp")
    if not token:
        return 2
    try:
        frames = load_frames(args.file)
    except (OSError, FeedFormatError) as exc:
        print(f"teledora xr send-udp: {exc}", file=sys.stderr)
        return 1
    sender = UdpFeedSender(args.host, args.port, token, pair_timeout_s=args.pair_timeout_s)
    sender.connect()
    session, seq, sent = sender.link.session.hex(), 1, 0
    try:
        sender.pair()
        while True:
            for at, frame in restamped(frames, args.speed, args.rate_hz, time.time_ns(), session, seq):
                delay = (at - time.time_ns()) / 1e9
                if delay > 0:
                    time.sleep(delay)
                # the envelope carries the actual send time; the frame keeps its schedule (never later)
                sender.send(json.dumps(frame, separators=(",", ":")).encode(), seq=frame["seq"])
                sent += 1
            seq += len(frames)
            if not args.loop:
                break
    except KeyboardInterrupt:
        pass
    except PairingFailed as exc:
        print(f"teledora xr send-udp: {exc}", file=sys.stderr)
        return 1
    finally:
        sender.close()
    print(f"sent {sent} frames to {args.host}:{args.port} ({sender.pairings} pairings)")
    return 0


def record_udp(args: argparse.Namespace) -> int:
    token = _token(args, "record-udp")
    if not token:
        return 2
    feed = UdpFeedBackend(args.bind, args.port, token)
    feed.connect()
    end = time.monotonic() + args.seconds if args.seconds else None
    kept = invalid = 0
    print(f"recording XR frames on {args.bind}:{feed.port} to {args.file}", flush=True)
    try:
        with args.file.open("w") as out:
            while (end is None or time.monotonic() < end) and (args.count is None or kept < args.count):
                for rx in feed.read(0.2):
                    if args.count is not None and kept >= args.count:
                        break
                    try:
                        parse_frame(rx.data)
                    except FeedRejected:
                        invalid += 1
                        continue
                    out.write(rx.data.decode() + "\n")
                    kept += 1
    except KeyboardInterrupt:
        pass
    finally:
        feed.close()
    skipped = invalid + sum(feed.rejections().values())
    print(f"recorded {kept} frames ({skipped} unauthenticated or invalid skipped)")
    return 0
