"""USB cameras read with OpenCV: one capture thread per camera.

:class:`CameraStream` opens its source with ``cv2.VideoCapture`` (a ``/dev``
path through the V4L2 backend, requesting the configured FOURCC (MJPEG), size
and frame rate and a one-buffer queue; anything else, e.g. a file or an
``http://`` MJPEG stream, through OpenCV's default backend), grabs frames as
they come, stamps each right after ``grab()`` returns, i.e. when the frame
reached the host, not when it is published, and keeps the last ``HOLD_FRAMES``
(about two seconds at 30 fps) for the publisher to take in order, so a
publisher held up for a moment loses nothing (:meth:`CameraStream.since`).

Frames are never decoded: OpenCV hands over the camera's own JPEG (the V4L2
backend with ``CAP_PROP_CONVERT_RGB`` off returns the MJPEG buffer as the
driver filled it; FFmpeg's, for files and URLs, returns the demuxed packet
with ``CAP_PROP_FORMAT`` -1), and only its header is read, for the size and
to refuse what is no whole JPEG (counted in :meth:`CameraStream.status`,
never published). A camera that cannot be opened or stops delivering is closed and
tried again every ``reconnect_period_s``; meanwhile :meth:`CameraStream.status`
says why, and the other cameras' threads are not affected.
"""

from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from teledora.operators.contract.compressed_image import JpegError, jpeg_problem, jpeg_size

OPEN_TIMEOUT_MS = 2000
READ_TIMEOUT_MS = 1000
HOLD_FRAMES = 64  # frames kept for the publisher: ~2 s at 30 fps, ~3 MB of JPEG at 640x480


@dataclass(frozen=True)
class CapturedFrame:
    """One frame: its number since the stream started, its capture time (host
    ns), the camera's JPEG bytes (flat uint8, as delivered) and its size from
    the JPEG header."""

    seq: int
    stamp_ns: int
    jpeg: np.ndarray
    width: int
    height: int


@dataclass(frozen=True)
class StreamStatus:
    state: str          # "opening", "streaming", "missing", "stopped"
    error: str          # why the camera is missing ("" while streaming)
    frames: int
    reconnects: int
    last_frame_ns: int | None
    size: tuple[int, int] | None  # (width, height) the camera delivers
    rejected: int = 0   # frames refused: no whole JPEG
    last_rejection: str = ""


class CameraStream:
    """One camera read in its own thread.

    Args:
        name: The camera's name (for messages).
        source: Device path (``/dev/...``), file, or URL.
        width, height, rate_hz, fourcc: What to ask a V4L2 device for.
        reconnect_period_s: Wait between attempts to (re)open the source.
        clock: Host clock in ns for the capture stamps.
    """

    def __init__(self, name: str, source: str, width: int, height: int, rate_hz: float, fourcc: str,
                 reconnect_period_s: float, clock: Callable[[], int] = time.time_ns) -> None:
        self.name, self.source = name, source
        self.width, self.height, self.rate_hz, self.fourcc = width, height, rate_hz, fourcc
        self.reconnect_period_s = reconnect_period_s
        self.clock = clock
        self._lock = threading.Lock()
        self._frame: CapturedFrame | None = None
        self._recent: collections.deque[CapturedFrame] = collections.deque(maxlen=HOLD_FRAMES)
        self._state, self._error = "opening", ""
        self._frames = 0
        self._reconnects = 0
        self._size: tuple[int, int] | None = None
        self._rejected, self._last_rejection = 0, ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._new = threading.Condition(self._lock)

    # ------------------------------------------------------------ public
    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"camera-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
        with self._lock:
            self._state = "stopped"

    def latest(self, after_seq: int = -1) -> CapturedFrame | None:
        """The newest frame if it is newer than ``after_seq``, else None."""
        with self._lock:
            f = self._frame
        return f if f is not None and f.seq > after_seq else None

    def since(self, after_seq: int) -> list[CapturedFrame]:
        """Every held frame newer than ``after_seq``, oldest first (a gap in
        their ``seq`` after ``after_seq`` is frames that fell out of the hold)."""
        with self._lock:
            return [f for f in self._recent if f.seq > after_seq]

    def wait(self, after_seq: int, timeout_s: float) -> CapturedFrame | None:
        """Blocks until a frame newer than ``after_seq`` exists (or the timeout)."""
        with self._new:
            self._new.wait_for(lambda: self._frame is not None and self._frame.seq > after_seq, timeout_s)
        return self.latest(after_seq)

    def status(self) -> StreamStatus:
        with self._lock:
            last = None if self._frame is None else self._frame.stamp_ns
            return StreamStatus(self._state, self._error, self._frames, self._reconnects, last, self._size,
                                self._rejected, self._last_rejection)

    # ------------------------------------------------------------ thread
    def _set(self, state: str, error: str = "") -> None:
        with self._lock:
            self._state, self._error = state, error

    def _run(self) -> None:
        import cv2

        first = True
        while not self._stop.is_set():
            if not first:
                with self._lock:
                    self._reconnects += 1
            first = False
            cap = self._open(cv2)
            if cap is None:
                self._stop.wait(self.reconnect_period_s)
                continue
            try:
                self._read_until_lost(cv2, cap)
            finally:
                cap.release()
            if not self._stop.is_set():
                self._stop.wait(self.reconnect_period_s)

    def _open(self, cv2: Any) -> Any:
        device = self.source.startswith("/dev/")
        api = cv2.CAP_V4L2 if device else cv2.CAP_ANY
        params = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, OPEN_TIMEOUT_MS, cv2.CAP_PROP_READ_TIMEOUT_MSEC, READ_TIMEOUT_MS]
        try:
            cap = cv2.VideoCapture(self.source, api, params)
        except cv2.error as exc:
            self._set("missing", f"camera {self.name}: cannot open {self.source}: {exc}")
            return None
        if not cap.isOpened():
            cap.release()
            self._set("missing", f"camera {self.name}: cannot open {self.source} (not connected? see docs/cameras.md)")
            return None
        if device:
            cap.set(cv2.CAP_PROP_FOURCC, cv2.VideoWriter_fourcc(*self.fourcc))
            cap.set(cv2.CAP_PROP_FRAME_WIDTH, self.width)
            cap.set(cv2.CAP_PROP_FRAME_HEIGHT, self.height)
            cap.set(cv2.CAP_PROP_FPS, self.rate_hz)
            cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # the newest frame, not one queued behind others
            passthrough = cap.set(cv2.CAP_PROP_CONVERT_RGB, 0)  # the driver's MJPEG buffer, undecoded
        else:
            passthrough = cap.set(cv2.CAP_PROP_FORMAT, -1)  # FFmpeg's demuxed packets, undecoded
        if not passthrough:
            cap.release()
            self._set("missing", f"camera {self.name}: {self.source} cannot hand over its frames undecoded")
            return None
        return cap

    def _read_until_lost(self, cv2: Any, cap: Any) -> None:
        while not self._stop.is_set():
            ok = cap.grab()
            stamp_ns = self.clock()  # the frame has just reached the host
            raw = cap.retrieve()[1] if ok else None
            if raw is None or raw.size == 0:
                with self._lock:
                    got_any = self._state == "streaming"
                why = "stopped delivering frames (unplugged?)" if got_any else "opened but delivers no frames"
                self._set("missing", f"camera {self.name}: {self.source} {why}; retrying every "
                                     f"{self.reconnect_period_s:g} s")
                return
            jpeg = raw.reshape(-1)
            try:
                width, height = jpeg_size(jpeg)
                why = jpeg_problem(jpeg, width, height)
            except JpegError as exc:
                why = str(exc)
            if why:  # counted and left out: the recorder and viewers get whole frames only
                with self._lock:
                    self._rejected += 1
                    self._last_rejection = (f"camera {self.name}: frame refused: {why} (the node passes the "
                                            f"camera's MJPEG through; does {self.source} deliver MJPG?)")
                continue
            with self._new:
                self._frames += 1
                self._frame = CapturedFrame(self._frames, stamp_ns, jpeg, width, height)
                self._recent.append(self._frame)
                self._size = (width, height)
                self._state, self._error = "streaming", ""
                self._new.notify_all()
