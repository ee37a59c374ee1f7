"""``teledora xr``: tools for the XR feed.

``teledora xr send-udp FILE`` replays a recorded JSON-lines feed (one frame per
line, the format of docs/xr.md) to the ``xr`` UDP node, keeping the recorded
timing from each frame's ``sent_ns`` (or ``--rate-hz`` when frames lack it).
Frames are re-stamped with the current clock and a fresh session, so the node
sees them as live.

``teledora xr record-udp FILE`` listens where the node would (127.0.0.1:9870 by
default; stop the node first) and writes every valid frame a bridge sends as one
line, until ``--seconds``/``--count`` or Ctrl-C. Invalid frames are counted and
skipped.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
import uuid
from pathlib import Path
from typing import Iterator

from teledora.operators.xr.xr_feed_format import MAX_FRAME_BYTES, FeedFormatError, parse_frame


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
    send.set_defaults(func=send_udp)
    rec = sub.add_parser("record-udp", help="record an XR feed from a UDP bridge to JSON lines")
    rec.add_argument("file", type=Path, help="output JSON-lines file")
    rec.add_argument("--bind", default="127.0.0.1")
    rec.add_argument("--port", type=int, default=9870)
    rec.add_argument("--seconds", type=float, default=None, help="stop after this long")
    rec.add_argument("--count", type=int, default=None, help="stop after this many frames")
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
                raise FeedFormatError(f"{path}:{lineno}: {exc}") from None
            frames.append(json.loads(line))
    if not frames:
        raise FeedFormatError(f"{path}: no frames")
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


def send_udp(args: argparse.Namespace) -> int:
    try:
        frames = load_frames(args.file)
    except (OSError, FeedFormatError) as exc:
        print(f"teledora xr send-udp: {exc}", file=sys.stderr)
        return 1
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    session, seq, sent = uuid.uuid4().hex[:8], 0, 0
    try:
        while True:
            for at, frame in restamped(frames, args.speed, args.rate_hz, time.time_ns(), session, seq):
                delay = (at - time.time_ns()) / 1e9
                if delay > 0:
                    time.sleep(delay)
                sock.sendto(json.dumps(frame, separators=(",", ":")).encode(), (args.host, args.port))
                sent += 1
            seq += len(frames)
            if not args.loop:
                break
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    print(f"sent {sent} frames to {args.host}:{args.port}")
    return 0


def record_udp(args: argparse.Namespace) -> int:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((args.bind, args.port))
    sock.settimeout(0.2)
    end = time.monotonic() + args.seconds if args.seconds else None
    kept = skipped = 0
    print(f"recording XR frames on {args.bind}:{sock.getsockname()[1]} to {args.file}", flush=True)
    try:
        with args.file.open("w") as out:
            while (end is None or time.monotonic() < end) and (args.count is None or kept < args.count):
                try:
                    data, _ = sock.recvfrom(MAX_FRAME_BYTES + 1)
                except socket.timeout:
                    continue
                try:
                    parse_frame(data)
                except FeedFormatError:
                    skipped += 1
                    continue
                out.write(data.decode() + "\n")
                kept += 1
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    print(f"recorded {kept} frames ({skipped} invalid skipped)")
    return 0
