"""The event loop shared by the XR feed nodes (``xr_udp``, ``xr_webxr``).

A feed device delivers raw frames (bytes, who sent them, the host receive
time and the sender's clock mapping); this loop parses them
(:mod:`teledora.operators.xr.xr_feed_format`), assembles ``XrControllers``
messages (:mod:`teledora.operators.xr.feed_assembler`), publishes each at
once, and services dora events between reads.

* A refused frame is counted by reason (``rejected_by_reason`` in
  diagnostics, device refusals included) and never fatal; while refusals
  happen the diagnostics level is ``warn``, naming them. The first refusal of
  each reason per diagnostics period is logged, the rest only counted, so a
  flood of garbage cannot flood the log.
* A frame is applied whole or not at all: the assembler's state changes only
  once its message has been sent.
* Display inputs go to the page: ``state`` (TeleopState, the stop
  controls and the heads-up line; with ``page_seq``, the newest of the
  client's own frames teleop has applied, :mod:`teledora.operators.xr.page_seq_map`,
  which acknowledges its stop press), ``episode`` (EpisodeState, the episode
  panel) and the camera images. A JPEG frame is checked whole and offered as
  its bytes (the page draws the camera's own JPEG, nothing decoded here); raw
  pixels are offered as an RGB array. A frame that fails its check is
  counted (``bad_image``) and not offered.
* Each report that changes a button, connection or page level (and one a
  second without a change) also goes out on ``buttons``
  (:mod:`teledora.operators.xr.level_changes`), for consumers that act on
  presses only.
* When the controlling client goes (the device says so, or another client
  takes over) a message with both hands disconnected is published first; it
  is built from the assembler's state alone, so no frame can prevent it.
"""

from __future__ import annotations

import traceback
from collections import Counter
from typing import Any, Mapping

from teledora.devices.xr.feed_device import FeedDevice, ReceivedFrame
from teledora.runtime.node_io import NodeIO
from teledora.operators.contract.compressed_image import COMPRESSED_ENCODINGS
from teledora.operators.contract.messages import MessageError, compressed_image_bytes, decode, decode_image
from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES
from teledora.operators.xr.camera_view import JpegFrame
from teledora.operators.xr.feed_assembler import FeedAssembler, StaleFrameError
from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.level_changes import LevelChanges
from teledora.operators.xr.page_seq_map import PageSeqMap
from teledora.operators.xr.xr_feed_format import parse_frame

READ_TIMEOUT_S = 0.005


class RejectionTally:
    """Counts refusals by reason into a node's diagnostics and sets its level.

    Args:
        io: The node's runtime.
    """

    def __init__(self, io: NodeIO) -> None:
        self.io = io
        self.by_reason: Counter[str] = Counter()
        self._period: Counter[str] = Counter()
        self._device_seen: dict[str, int] = {}

    def reject(self, reason: str, message: str) -> None:
        """One refusal of the loop's own (a frame)."""
        self.io.diag.reject(f"{reason}: {message}", reason)
        self._count(reason, 1, message)

    def absorb_device(self, counts: Mapping[str, int]) -> None:
        """Takes in what the device refused since the last call (its counters are cumulative)."""
        for reason, total in counts.items():
            new = total - self._device_seen.get(reason, 0)
            if new > 0:
                self.io.diag.rejected += new
                self.io.diag.rejected_by_reason[reason] = self.io.diag.rejected_by_reason.get(reason, 0) + new
                self.io.diag.last_error = f"{reason}: refused by the feed device"
                self._count(reason, new, "refused by the feed device")
        self._device_seen = dict(counts)

    def _count(self, reason: str, n: int, message: str) -> None:
        if not self._period[reason]:
            self.io.log("warn", f"rejected {reason}: {message} (further ones this period only counted)")
        self.by_reason[reason] += n
        self._period[reason] += n

    def settle(self) -> None:
        """Sets the level for the diagnostics about to be published, and starts a new period."""
        if self._period:
            listed = ", ".join(f"{r} {n}" for r, n in self._period.most_common())
            self.io.diag.set_status("warn", f"refused since last report: {listed}")
        else:
            self.io.diag.set_status("ok", "")
        self._period.clear()  # (the runtime publishes the counts per reason, with the node's other rejections)


def run_feed(io: NodeIO, backend: FeedDevice, assembler: FeedAssembler) -> None:
    """Runs until dora sends STOP; ``backend`` must be connected already."""
    tally = RejectionTally(io)
    changes = LevelChanges()
    seqs = PageSeqMap()
    client: int | None = None
    try:
        while True:
            for rx in backend.read(READ_TIMEOUT_S):
                io.diag.received += 1
                if rx.client != client:
                    if client is not None and assembler.live:
                        _publish_disconnect(io, assembler, changes, rx.recv_ns, f"controlling client changed to {rx.peer}")
                    client = rx.client
                    assembler.new_client()
                    seqs.clear()
                if rx.disconnect:
                    _publish_disconnect(io, assembler, changes, rx.recv_ns, f"controlling client {rx.peer} disconnected")
                    continue
                _handle_frame(io, assembler, tally, rx, changes, seqs)
            if not _service_events(io, backend, tally, seqs):
                return
            _publish_diagnostics(io, backend, assembler, tally)
    finally:
        _publish_diagnostics(io, backend, assembler, tally, force=True)
        backend.close()


def _send_report(io: NodeIO, changes: LevelChanges, message: Mapping[str, Any], now_ns: int) -> bool:
    """Sends one report on ``controllers``, and on ``buttons`` when its levels changed."""
    if not io.send("controllers", "XrControllers", message):
        return False
    if changes.due(message, now_ns):
        io.send("buttons", "XrControllers", message)
    return True


def _handle_frame(io: NodeIO, assembler: FeedAssembler, tally: RejectionTally, rx: ReceivedFrame,
                  changes: LevelChanges, seqs: PageSeqMap) -> None:
    try:
        frame = parse_frame(rx.data)
        pending = assembler.prepare(frame, rx.recv_ns, rx.clock)
    except FeedRejected as exc:
        tally.reject(exc.reason, f"frame from {rx.peer}: {exc}")
        return
    except StaleFrameError as exc:
        io.diag.dropped += 1
        io.diag.details["last_drop"] = str(exc)
        return
    except Exception as exc:  # a bug, not an input: count it, say where, keep the feed alive
        tally.reject("internal_error", f"frame from {rx.peer}: {type(exc).__name__}: {exc}")
        io.log("error", f"frame handling raised:\n{traceback.format_exc()}")
        return
    if _send_report(io, changes, pending.message, rx.recv_ns):
        pending.commit()
        seqs.add(pending.message["seq"], frame.seq)
        io.diag.details.update(peer=rx.peer, last_seq=pending.message["seq"])


def _publish_disconnect(io: NodeIO, assembler: FeedAssembler, changes: LevelChanges, now_ns: int, why: str) -> None:
    io.log("info", f"{why}: both hands reported disconnected, new epochs for the next client")
    _send_report(io, changes, assembler.disconnect(now_ns), now_ns)


def _publish_diagnostics(io: NodeIO, backend: FeedDevice, assembler: FeedAssembler, tally: RejectionTally,
                         force: bool = False) -> None:
    tally.absorb_device(backend.rejections())
    if not (force or io.diag.due(io.now())):
        return
    details: dict[str, Any] = dict(backend.diagnostics_details())
    details.update(link_delay_ns=assembler.link_delay_ns, max_link_delay_ns=assembler.max_link_delay_ns)
    io.diag.details.update(details)
    tally.settle()
    io.publish_diagnostics(force=True)


def _service_events(io: NodeIO, backend: FeedDevice, tally: RejectionTally, seqs: PageSeqMap) -> bool:
    """Handles queued dora events; False once the node must stop (STOP, or
    the end of its event stream)."""
    batch = io.next_batch(timeout_s=0)
    if batch is None:
        return False
    for event in io.newest(batch, set(CAMERA_NAMES)):  # of a burst of images only the newest matters
        kind = event.get("type")
        if kind == "STOP":
            return False
        if kind == "INPUT" and event.get("id") in CAMERA_NAMES:
            meta = event.get("metadata") or {}
            try:
                image = _page_image(event["value"], meta)
            except MessageError as exc:  # a display-only input: never fatal; counted so the level shows it
                tally.reject(exc.reason, f"{event.get('id')}: {exc}")
                continue
            capture = meta.get("capture_ns", meta.get("stamp_ns", io.clock()))
            backend.offer_image(event["id"], image, int(capture))
            continue
        if kind == "INPUT" and event.get("id") == "state":
            try:
                state = decode("TeleopState", event["value"])
            except Exception as exc:  # a display-only input: never fatal
                io.reject(f"state: {exc}")
                continue
            shown = {"type": "state", **{k: v for k, v in state.items() if k != "stamp_ns"}}
            page_seq = seqs.page_seq((event.get("metadata") or {}).get("xr_seq"))
            if page_seq is not None:
                shown["page_seq"] = page_seq
            backend.write(shown)
            continue
        if kind == "INPUT" and event.get("id") == "episode":
            try:
                episode = decode("EpisodeState", event["value"])
            except Exception as exc:  # a display-only input: never fatal
                io.reject(f"episode: {exc}")
                continue
            backend.write(episode_message(episode, io.now()))
    return True


def _page_image(value: Any, meta: Mapping[str, Any]) -> JpegFrame | Any:
    """What the page is offered of one camera message: a JPEG's own bytes, or a copy of raw pixels
    (the server keeps it after the event is gone)."""
    if meta.get("encoding") in COMPRESSED_ENCODINGS:
        data = compressed_image_bytes(value, meta)
        return JpegFrame(data, int(meta["width"]), int(meta["height"]))
    return decode_image(value, meta).copy()


def episode_message(state: Mapping[str, Any], now_ns: int) -> dict[str, Any]:
    """The page's ``episode`` message from an ``EpisodeState``: how long the open
    episode has run is given as a duration (``open_for_ns``, at ``now_ns``), so the
    page needs no clock mapping to count it on."""
    open_for = max(0, int(now_ns) - int(state["opened_ns"])) if state["open"] else 0
    return {"type": "episode", "open": bool(state["open"]), "task": state["task"], "number": int(state["number"]),
            "open_for_ns": open_for, "discard_armed": bool(state["discard_armed"]), "kept": int(state["kept"]),
            "discarded": int(state["discarded"])}
