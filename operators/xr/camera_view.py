"""The operator's camera view: which frame goes to the headset page next, and how
long a frame took from capture to the page's display.

Latest frame only, one in flight per camera: a camera's next frame is sent only
after the page has said it drew the previous one (a ``shown`` message), so the
page is never sent frames faster than it displays them and nothing queues up
anywhere; frames that came meanwhile are skipped, only the newest is sent. An
acknowledgement lost with a dropped socket would stall a camera, so after
``ack_timeout_ns`` without one the next frame may go.

Binary message to the page: 4 bytes big-endian header length, the header (JSON:
camera, seq, capture_ns as a decimal string (a JavaScript number cannot hold
every nanosecond stamp), width, height), then the JPEG. A camera that sends
JPEG frames is forwarded byte for byte (:class:`JpegFrame`, checked whole
where it arrives, never decoded or encoded again); only raw pixels are encoded
for the page.
"""

from __future__ import annotations

import json
import struct
from collections import deque
from dataclasses import dataclass, field

import numpy as np

ACK_TIMEOUT_NS = 1_000_000_000
STATS_WINDOW = 600
PARTS = ("to_node", "in_node", "to_page")


@dataclass(frozen=True)
class JpegFrame:
    """A camera's own JPEG, checked whole against its size, to go to the page as it is."""

    data: bytes
    width: int
    height: int


def frame_message(camera: str, seq: int, capture_ns: int, width: int, height: int, jpeg: bytes) -> bytes:
    header = json.dumps({"camera": camera, "seq": seq, "capture_ns": str(int(capture_ns)), "width": width,
                         "height": height}).encode()
    return struct.pack(">I", len(header)) + header + jpeg


def split_frame_message(data: bytes) -> tuple[dict, bytes]:
    """The header and JPEG of a :func:`frame_message` (the page's reading, for tests)."""
    (n,) = struct.unpack(">I", data[:4])
    return json.loads(data[4:4 + n]), data[4 + n:]


@dataclass
class CameraGate:
    """One camera's send state for one page."""

    latest_seq: int = -1       # newest frame offered
    in_flight_seq: int = -1    # sent, not yet shown (-1: none)
    in_flight_ns: int = 0
    last_sent_seq: int = -1
    sent: int = 0
    shown: int = 0
    skipped: int = 0           # frames replaced by a newer one before they could go (seq gaps between sends)

    def offer(self, seq: int) -> None:
        self.latest_seq = max(self.latest_seq, seq)

    def ready(self, now_ns: int, ack_timeout_ns: int = ACK_TIMEOUT_NS) -> bool:
        """A newer frame than the last sent exists and none is in flight (or its ack is overdue)."""
        if self.latest_seq <= self.last_sent_seq:
            return False
        return self.in_flight_seq < 0 or now_ns - self.in_flight_ns > ack_timeout_ns

    def mark_sent(self, seq: int, now_ns: int) -> None:
        if self.last_sent_seq >= 0:
            self.skipped += max(0, seq - self.last_sent_seq - 1)  # offered in between, never sent
        self.in_flight_seq, self.in_flight_ns, self.last_sent_seq = seq, now_ns, seq
        self.sent += 1

    def mark_shown(self, seq: int) -> bool:
        """The page drew ``seq``; False for a frame that is not the one in flight (stale or forged)."""
        if seq != self.in_flight_seq:
            return False
        self.in_flight_seq = -1
        self.shown += 1
        return True


@dataclass
class LatencyStats:
    """Capture-to-display latencies (ns) and display times, over a sliding window, with
    the path split in three: capture to the xr node, in the node (waiting for the page's
    answer, encoding), and sent to drawn on the page."""

    latencies_ns: deque = field(default_factory=lambda: deque(maxlen=STATS_WINDOW))
    shown_ns: deque = field(default_factory=lambda: deque(maxlen=STATS_WINDOW))
    parts_ns: dict = field(default_factory=lambda: {k: deque(maxlen=STATS_WINDOW) for k in PARTS})

    def add(self, capture_ns: int, display_host_ns: int, arrived_ns: int | None = None,
            sent_ns: int | None = None) -> None:
        self.latencies_ns.append(display_host_ns - capture_ns)
        self.shown_ns.append(display_host_ns)
        if arrived_ns is not None and sent_ns is not None:
            self.parts_ns["to_node"].append(arrived_ns - capture_ns)
            self.parts_ns["in_node"].append(sent_ns - arrived_ns)
            self.parts_ns["to_page"].append(display_host_ns - sent_ns)

    def summary(self) -> dict[str, float | int | None]:
        lat = np.asarray(self.latencies_ns, dtype=float) / 1e6
        shown = np.asarray(self.shown_ns, dtype=float)
        rate = None
        if len(shown) > 1 and shown[-1] > shown[0]:
            rate = round((len(shown) - 1) / ((shown[-1] - shown[0]) / 1e9), 2)
        return {"frames": int(len(lat)),
                "median_ms": None if not len(lat) else round(float(np.median(lat)), 2),
                "p95_ms": None if not len(lat) else round(float(np.percentile(lat, 95)), 2),
                "shown_hz": rate,
                **{f"{k}_median_ms": (round(float(np.median(v)) / 1e6, 2) if v else None)
                   for k, v in self.parts_ns.items()}}
