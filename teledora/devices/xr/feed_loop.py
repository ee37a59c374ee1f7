"""The event loop shared by the XR feed nodes (``xr_udp``, ``xr_webxr``).

A feed backend delivers raw frames (bytes + who sent them + host receive time);
this loop parses them (:mod:`teledora.operators.xr.xr_feed_format`), assembles
``XrControllers`` messages with per-hand epochs, publishes each at once, and
services dora events between reads. Malformed, oversized and stale frames are
dropped and counted, never fatal.
"""

from __future__ import annotations

from typing import Callable

from teledora.devices.xr.feed_device import FeedDevice
from teledora.runtime.node_io import NodeIO
from teledora.operators.contract.messages import decode
from teledora.operators.xr.xr_feed_format import FeedAssembler, FeedFormatError, StaleFrameError, parse_frame

READ_TIMEOUT_S = 0.005


def run_feed(io: NodeIO, backend: FeedDevice, assembler: FeedAssembler, refresh: Callable[[], None] | None = None) -> None:
    """Runs until dora sends STOP; ``backend`` must be connected already.

    ``refresh`` runs once per cycle, before diagnostics are (maybe) published,
    to copy backend counters into ``io.diag.details``.
    """
    client: int | None = None
    last_seq = -1
    try:
        while True:
            for rx in backend.read(READ_TIMEOUT_S):
                io.diag.received += 1
                if rx.client != client:
                    if client is not None:
                        io.log("info", f"controlling client changed to {rx.peer}: new epochs for both hands")
                    client = rx.client
                    assembler.new_client()
                try:
                    msg = assembler.assemble(parse_frame(rx.data), rx.recv_ns)
                except FeedFormatError as exc:
                    io.reject(f"frame from {rx.peer}: {exc}")
                    continue
                except StaleFrameError as exc:
                    io.diag.dropped += 1
                    io.diag.details["last_drop"] = str(exc)
                    continue
                if not io.send("controllers", "XrControllers", msg):
                    continue
                last_seq = msg["seq"]
                io.diag.details.update(peer=rx.peer, clock_offset_ns=assembler.clock_offset_ns, last_seq=last_seq)
            if not _service_events(io, backend):
                return
            if refresh is not None:
                refresh()
            io.publish_diagnostics()
    finally:
        if refresh is not None:
            refresh()
        io.publish_diagnostics(force=True)
        backend.close()


def _service_events(io: NodeIO, backend: FeedDevice) -> bool:
    """Handles queued dora events; False once the node must stop (STOP, or
    the end of its event stream)."""
    batch = io.next_batch(timeout_s=0)
    if batch is None:
        return False
    for event in batch:
        kind = event.get("type")
        if kind == "STOP":
            return False
        if kind == "INPUT" and event.get("id") == "state":
            try:
                state = decode("TeleopState", event["value"])
            except Exception as exc:  # a display-only input: never fatal
                io.reject(f"state: {exc}")
                continue
            backend.write({"type": "state", **{k: v for k, v in state.items() if k != "stamp_ns"}})
    return True
