"""replayer: stands in for a recorded node, sending its recorded outputs again.

``teledora replay`` puts one replayer in the dataflow for each replaced node,
under that node's id and with its outputs; the rest of the graph runs live.

Args (environment in brackets):
    --run RUN        run directory to replay [TELEDORA_REPLAY_RUN]
    --node ID        the node it stands in for [DORA_NODE_ID]
    --speed X        1.0 original timing, 2.0 twice as fast, 0 as fast as
                     the consumers accept (backpressure) [TELEDORA_REPLAY_SPEED]
    --stamps MODE    ``shifted`` (default): every ``stamp_ns``/``*_stamp_ns`` field
                     and ``stamp_ns`` metadata moves by (now - recorded send
                     time), so each message is as fresh as when it was
                     recorded and live nodes that check freshness accept it;
                     ``recorded``: the recorded bytes, unchanged
                     [TELEDORA_REPLAY_STAMPS]
    --loop           start again from the beginning when done, until stopped
    --loops N        play the run N times (default 1)

Messages go out in the order they were sent (dora's send timestamp; each
topic keeps its recorded order), at their recorded spacing, with their
recorded metadata (dora re-stamps ``timestamp``). The recorder's ``seq`` is
arrival order, which under load lags send order by up to seconds across
topics; scheduling arrival-ordered messages by send time sent many late, in
bursts. Progress is printed about once a
second; ``replay <id> done: ...`` is printed at the end.

The replayer reads its events through the node runtime like every source
node: it looks for STOP at least every 20 ms, also while it waits for a
message's time, and then ends at once with ``replay <id> stopped after N
messages``. It publishes its own ``diagnostics`` (messages sent, ``replayed``
of ``total`` in this pass, ``pass``, ``behind_ms``: how late the last message
went out); the recorded node's diagnostics are not replayed, so the output
carries one node's health only: the replayer's.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Sequence

import pyarrow as pa

from teledora.operators.errors import TeledoraError
from teledora.runtime.node_io import NodeIO, make_node, node_id
from teledora.operators.recording.replay_schedule import ReplaySchedule, shift_stamps
from teledora.recording import RunReader, message_time_ns, replay_metadata, run_time_span

PROGRESS_PERIOD_NS = 1_000_000_000
# how often the replayer looks for STOP while it waits or sends
POLL_PERIOD_NS = 20_000_000
DIAGNOSTICS = "diagnostics"
DONE_MARKER = "done:"


class ReplaySourceError(TeledoraError, RuntimeError):
    """The run holds nothing this replayer could send."""


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    env = os.environ
    ap = argparse.ArgumentParser(prog="replayer", description=__doc__.splitlines()[0])
    ap.add_argument("--run", default=env.get("TELEDORA_REPLAY_RUN"), required=env.get("TELEDORA_REPLAY_RUN") is None)
    ap.add_argument("--node", default=None)
    ap.add_argument("--speed", type=float, default=float(env.get("TELEDORA_REPLAY_SPEED", "1.0")))
    ap.add_argument(
        "--stamps",
        choices=["shifted", "recorded"],
        default=env.get("TELEDORA_REPLAY_STAMPS", "shifted"),
        help="shifted: move stamp_ns fields by (now - recorded send time) so live nodes see fresh data; "
        "recorded: send the recorded bytes unchanged",
    )
    ap.add_argument("--loop", dest="loops", action="store_const", const=0, default=1, help="repeat until stopped")
    ap.add_argument("--loops", type=int, dest="loops", help="play the run this many times (0 = forever)")
    args = ap.parse_args(list(argv) if argv is not None else [])
    if args.speed < 0:
        ap.error(f"--speed must be >= 0, got {args.speed}")
    return args


def _recorded_topics(reader: RunReader, me: str) -> dict[str, str]:
    """Topic -> output id of what the replayer sends: the node's recorded
    outputs but its ``diagnostics``, which the replayer publishes itself."""
    return {t: o for t, o in reader.topics_of(me).items() if o != DIAGNOSTICS}


def _stop_asked(io: NodeIO) -> bool:
    """Whether dora asks the node to stop, or its event stream has ended."""
    batch = io.poll()
    return batch is None or any(event.get("type") == "STOP" for event in batch)


def main(
    argv: Sequence[str] | None = None,
    node: Any = None,
    clock: Callable[[], int] = time.time_ns,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Replays the node's recorded outputs; returns how many it sent."""
    args = parse_args(argv if argv is not None else sys.argv[1:])
    me = args.node or node_id("replayer")
    reader = RunReader(args.run)
    if not reader.topics_of(me):
        raise ReplaySourceError(f"run {args.run} holds no recorded output of node {me!r}")
    topics = _recorded_topics(reader, me)  # may be empty: a node that recorded only its diagnostics
    span = run_time_span(reader)
    total = sum(reader.read_topic(t).table.num_rows for t in topics)
    io = NodeIO(make_node(node), me, clock=clock, ends_with=())  # a source: plays until done or STOP
    start = clock()
    schedule = ReplaySchedule(span[0] if span else start, start, args.speed)
    loop_ns = (span[1] - span[0] + 1) if span else 1
    if args.speed > 0:
        loop_ns = int(loop_ns / args.speed)
    print(f"replay {me}: {total} messages on {', '.join(sorted(topics.values()))} at speed {args.speed:g}", flush=True)
    diag = io.diag
    diag.details.update({"replayed": 0, "total": total, "pass": 1, "behind_ms": 0.0})
    diag.set_status("ok", f"replaying {total} messages at speed {args.speed:g}")
    io.publish_diagnostics(force=True)
    sent = 0
    last_progress = last_poll = start
    played = 0
    stopped = False
    while not stopped:
        for msg in reader.iter_sent(topics):
            due_ns = schedule.due_ns(message_time_ns(msg))
            # wait in slices, so that a STOP during a long gap ends the replay promptly
            while (wait_ns := due_ns - clock()) > POLL_PERIOD_NS:
                sleep(POLL_PERIOD_NS / 1e9)
                last_poll = clock()
                if stopped := _stop_asked(io):
                    break
                io.publish_diagnostics()
            if stopped:
                break
            if wait_ns > 0:
                sleep(wait_ns / 1e9)
            value = pa.concat_arrays([msg.value])
            metadata = replay_metadata(msg.metadata)
            if args.stamps == "shifted":
                # each message keeps its recorded age: a replayer that falls
                # behind on a busy machine still sends data that looks fresh
                offset = clock() - message_time_ns(msg)
                value = shift_stamps(value, offset)
                if isinstance(metadata.get("stamp_ns"), int) and metadata["stamp_ns"] > 0:
                    metadata["stamp_ns"] += offset
            # the recorded metadata as it was (no seq of the replayer's own)
            io.node.send_output(topics[msg.topic], value, metadata)
            sent += 1
            diag.sent += 1
            now = clock()
            done = sent % total or total
            diag.details["replayed"] = done
            diag.details["behind_ms"] = round(max(0, now - due_ns) / 1e6, 3) if args.speed > 0 else 0.0
            if now - last_progress >= PROGRESS_PERIOD_NS:
                print(f"replay {me}: {done}/{total} ({100 * done / total:.0f}%)", flush=True)
                last_progress = now
            if now - last_poll >= POLL_PERIOD_NS:
                last_poll = now
                if stopped := _stop_asked(io):
                    break
            io.publish_diagnostics()
        if stopped:
            break
        played += 1
        if (args.loops and played >= args.loops) or not total:
            break
        diag.details["pass"] = played + 1
        schedule = schedule.shifted(loop_ns)
    elapsed = (clock() - start) / 1e9
    if stopped:
        done = (sent % total or (total if sent else 0)) if total else 0
        ending = f"stopped after {sent} messages ({done}/{total} of pass {played + 1}) in {elapsed:.2f} s"
    else:
        ending = f"{DONE_MARKER} {sent} messages in {elapsed:.2f} s"
    diag.set_status("ok", ending)
    io.publish_diagnostics(force=True)
    print(f"replay {me} {ending}", flush=True)
    return sent


if __name__ == "__main__":
    main()
