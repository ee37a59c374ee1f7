"""A recorded run as a Rerun recording (.rrd), on the run's stamp timeline."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from teledora.devices.viewing.rerun_sink import RerunSink, log_message
from teledora.operators.viewing.view_mapping import ViewMapper
from teledora.recording.run_reader import RunReader


@dataclass
class Conversion:
    """What a conversion wrote: messages read, shown, skipped as invalid, items logged."""

    messages: int
    shown: int
    invalid: int
    items: int


def convert_run(reader: RunReader, mapper: ViewMapper, output: Path, recording_id: str | None = None) -> Conversion:
    """Maps every recorded message of ``reader`` through ``mapper`` (in send
    order) and writes the items to ``output`` (.rrd). A message without a stamp
    goes on the timeline at its send (or arrival) time."""
    sink = RerunSink("teledora", recording_id=recording_id)
    sink.save(output)
    sink.log_static(mapper.static_items())
    n = invalid = 0
    last = None
    try:
        for msg in reader.iter_sent():
            n += 1
            fallback = msg.stamp_ns if msg.stamp_ns is not None else (msg.dora_ns or msg.recv_ns)
            invalid += log_message(mapper, sink, msg.topic, msg.value, json.loads(msg.metadata or "{}"), fallback) == "invalid"
            last = fallback if last is None else max(last, fallback)
        if last is not None:
            sink.log(last, mapper.final_items())
    finally:
        sink.close()
    return Conversion(n, sum(mapper.counts.shown.values()), invalid, sink.items_logged)
