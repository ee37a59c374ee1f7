"""When recorded messages were sent: the clock replay and inspection go by."""

from __future__ import annotations

from teledora.recording.run_reader import RecordedMessage, RunReader


def message_time_ns(msg: RecordedMessage) -> int:
    """When a recorded message was sent: dora's timestamp, else arrival time."""
    return msg.dora_ns if msg.dora_ns is not None else msg.recv_ns


def run_time_span(reader: RunReader) -> tuple[int, int] | None:
    """(first, last) send time over every topic of a run, or None if it is empty."""
    first: int | None = None
    last: int | None = None
    for topic in reader.topics:
        table = reader.read_topic(topic).table
        if table.num_rows == 0:
            continue
        dora = table.column("dora_ns").to_pylist()
        recv = table.column("recv_ns").to_pylist()
        times = [d if d is not None else r for d, r in zip(dora, recv)]
        lo, hi = min(times), max(times)
        first = lo if first is None else min(first, lo)
        last = hi if last is None else max(last, hi)
    return None if first is None else (first, last)
