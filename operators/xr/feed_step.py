"""The XR feed nodes' decisions (``xr_udp``, ``xr_webxr``), with no I/O.

A feed device delivers raw frames (bytes, who sent them, the host receive
time, the sender's clock mapping); :class:`FeedStep` parses each
(:mod:`teledora.operators.xr.xr_feed_format`) and assembles the
``XrControllers`` report (:mod:`teledora.operators.xr.feed_assembler`) the
node sends at once.

* A refused frame is counted by reason (``rejected_by_reason`` in
  diagnostics, the device's own refusals included) and never fatal; while
  refusals happen the diagnostics level is ``warn``, naming them. The first
  refusal of each reason per diagnostics period is logged, the rest only
  counted, so a flood of garbage cannot flood the log.
* A frame is applied whole or not at all: the assembler's state changes only
  once its report has been sent (:meth:`FeedStep.sent`).
* When the controlling client goes (the device says so, or another client
  takes over) a report with both hands disconnected comes first; it is built
  from the assembler's state alone, so no frame can prevent it.
* Each report that changes a button, connection or page level (and one a
  second without a change) also goes out on ``buttons``
  (:mod:`teledora.operators.xr.level_changes`).
* Display inputs become what the page is shown (:meth:`FeedStep.display`):
  teleop's ``state`` (with ``page_seq``, the newest of the client's own frames
  teleop has applied, which acknowledges its stop press), the ``episode``
  panel, and camera images (a JPEG checked whole and offered as its bytes, raw
  pixels as an RGB array). A bad one is counted, never fatal.

Log lines the node should write collect in :meth:`FeedStep.take_logs`.
"""

from __future__ import annotations

import traceback
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping, Protocol

from teledora.operators.contract.compressed_image import COMPRESSED_ENCODINGS
from teledora.operators.contract.diagnostics import Diagnostics
from teledora.operators.contract.messages import MessageError, compressed_image_bytes, decode, decode_image
from teledora.operators.rendering.camera_intrinsics import CAMERA_NAMES
from teledora.operators.xr.camera_view import JpegFrame
from teledora.operators.xr.feed_assembler import Assembled, FeedAssembler, StaleFrameError
from teledora.operators.xr.feed_rejection import FeedRejected
from teledora.operators.xr.headset_clock import ClockEstimate
from teledora.operators.xr.level_changes import LevelChanges
from teledora.operators.xr.page_seq_map import PageSeqMap
from teledora.operators.xr.xr_feed_format import parse_frame


class Frame(Protocol):
    """One frame as a feed device received it (or the news that its client left)."""

    data: bytes
    peer: str
    client: int
    recv_ns: int
    clock: ClockEstimate | None
    disconnect: bool


@dataclass(frozen=True)
class Report:
    """An ``XrControllers`` report to send on ``controllers``; then hand it to
    :meth:`FeedStep.sent`."""

    message: dict[str, Any]
    now_ns: int
    pending: Assembled | None = None  # a frame's, applied once sent
    page_seq: int | None = None  # the client's own number for the frame
    peer: str = ""


@dataclass(frozen=True)
class PageImage:
    """A camera image to offer the page."""

    camera: str
    image: Any
    capture_ns: int


class RejectionTally:
    """Counts refusals by reason into a node's diagnostics and sets its level.

    Args:
        diag: The node's diagnostics.
        log: Where the log lines go ((level, text) pairs).
    """

    def __init__(self, diag: Diagnostics, log: list[tuple[str, str]]) -> None:
        self.diag = diag
        self.log = log
        self.by_reason: Counter[str] = Counter()
        self._period: Counter[str] = Counter()
        self._device_seen: dict[str, int] = {}

    def reject(self, reason: str, message: str) -> None:
        """One refusal of the node's own (a frame, a camera image)."""
        self.diag.reject(f"{reason}: {message}", reason)
        self._count(reason, 1, message)

    def absorb_device(self, counts: Mapping[str, int]) -> None:
        """Takes in what the device refused since the last call (its counters are cumulative)."""
        for reason, total in counts.items():
            new = total - self._device_seen.get(reason, 0)
            if new > 0:
                self.diag.rejected += new
                self.diag.rejected_by_reason[reason] = self.diag.rejected_by_reason.get(reason, 0) + new
                self.diag.last_error = f"{reason}: refused by the feed device"
                self._count(reason, new, "refused by the feed device")
        self._device_seen = dict(counts)

    def _count(self, reason: str, n: int, message: str) -> None:
        if not self._period[reason]:
            self.log.append(("warn", f"rejected {reason}: {message} (further ones this period only counted)"))
        self.by_reason[reason] += n
        self._period[reason] += n

    def settle(self) -> None:
        """Sets the level for the diagnostics about to be published, and starts a new period."""
        if self._period:
            listed = ", ".join(f"{r} {n}" for r, n in self._period.most_common())
            self.diag.set_status("warn", f"refused since last report: {listed}")
        else:
            self.diag.set_status("ok", "")
        self._period.clear()


class FeedStep:
    """One XR feed's state: the assembler, the controlling client, the level
    changes reported on ``buttons`` and the page's frame numbers.

    Args:
        assembler: Builds the reports (its ``source`` names the feed).
        diag: The node's diagnostics (counters, drops, rejections by reason).
    """

    def __init__(self, assembler: FeedAssembler, diag: Diagnostics) -> None:
        self.assembler = assembler
        self.diag = diag
        self._logs: list[tuple[str, str]] = []
        self.tally = RejectionTally(diag, self._logs)
        self.changes = LevelChanges()
        self.seqs = PageSeqMap()
        self.client: int | None = None

    def take_logs(self) -> list[tuple[str, str]]:
        """The (level, text) lines to log since the last call."""
        out = list(self._logs)
        self._logs.clear()
        return out

    def receive(self, rx: Frame) -> list[Report]:
        """The reports one received frame calls for, in order: a disconnect
        when the controlling client changed or left, then the frame's own."""
        reports = []
        if rx.client != self.client:
            if self.client is not None and self.assembler.live:
                reports.append(self._disconnect(rx.recv_ns, f"controlling client changed to {rx.peer}"))
            self.client = rx.client
            self.assembler.new_client()
            self.seqs.clear()
        if rx.disconnect:
            reports.append(self._disconnect(rx.recv_ns, f"controlling client {rx.peer} disconnected"))
            return reports
        try:
            frame = parse_frame(rx.data)
            pending = self.assembler.prepare(frame, rx.recv_ns, rx.clock)
        except FeedRejected as exc:
            self.tally.reject(exc.reason, f"frame from {rx.peer}: {exc}")
        except StaleFrameError as exc:
            self.diag.dropped += 1
            self.diag.details["last_drop"] = str(exc)
        except Exception as exc:  # a bug, not an input: count it, say where, keep the feed alive
            self.tally.reject("internal_error", f"frame from {rx.peer}: {type(exc).__name__}: {exc}")
            self._logs.append(("error", f"frame handling raised:\n{traceback.format_exc()}"))
        else:
            reports.append(Report(pending.message, rx.recv_ns, pending, frame.seq, rx.peer))
        return reports

    def _disconnect(self, now_ns: int, why: str) -> Report:
        self._logs.append(("info", f"{why}: both hands reported disconnected, new epochs for the next client"))
        return Report(self.assembler.disconnect(now_ns), now_ns)

    def sent(self, report: Report) -> bool:
        """Applies a report that went out on ``controllers``; True when it
        also goes out on ``buttons``."""
        buttons = self.changes.due(report.message, report.now_ns)
        if report.pending is not None:
            report.pending.commit()
            self.seqs.add(report.message["seq"], report.page_seq)
            self.diag.details.update(peer=report.peer, last_seq=report.message["seq"])
        return buttons

    def display(self, input_id: str, value: Any, metadata: Mapping[str, Any], now_ns: int) -> PageImage | dict | None:
        """What the page is shown for one display input: a :class:`PageImage`,
        a page message, or None (a bad input, counted; an unknown one)."""
        if input_id in CAMERA_NAMES:
            try:
                image = page_image(value, metadata)
            except MessageError as exc:  # display only: counted so the level shows it
                self.tally.reject(exc.reason, f"{input_id}: {exc}")
                return None
            return PageImage(input_id, image, int(metadata.get("capture_ns", metadata.get("stamp_ns", now_ns))))
        if input_id == "state":
            try:
                state = decode("TeleopState", value)
            except Exception as exc:  # display only: never fatal
                self._reject(f"state: {exc}")
                return None
            shown = {"type": "state", **{k: v for k, v in state.items() if k != "stamp_ns"}}
            page_seq = self.seqs.page_seq(metadata.get("xr_seq"))
            if page_seq is not None:
                shown["page_seq"] = page_seq
            return shown
        if input_id == "episode":
            try:
                episode = decode("EpisodeState", value)
            except Exception as exc:  # display only: never fatal
                self._reject(f"episode: {exc}")
                return None
            return episode_message(episode, now_ns)
        return None

    def _reject(self, reason: str) -> None:
        self.diag.reject(reason, "contract")
        self._logs.append(("warn", f"rejected {reason}"))

    def details(self) -> dict[str, Any]:
        """The feed's link delays, for diagnostics."""
        return {"link_delay_ns": self.assembler.link_delay_ns, "max_link_delay_ns": self.assembler.max_link_delay_ns}


def page_image(value: Any, meta: Mapping[str, Any]) -> JpegFrame | Any:
    """What the page is offered of one camera message: a JPEG's own bytes, or
    a copy of raw pixels (the device keeps it after the event is gone).

    Raises:
        MessageError: the frame is no whole image of its metadata's size.
    """
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
