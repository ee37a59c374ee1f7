"""A fake USB camera on 127.0.0.1: an MJPEG stream over HTTP that OpenCV opens
through the same ``cv2.VideoCapture`` path as a V4L2 device.

A real UVC camera in MJPEG mode hands the host one JPEG per frame at its frame
rate; this server sends the same JPEGs as ``multipart/x-mixed-replace`` parts
at ``rate_hz``, so the capture code gets real JPEG bytes (:meth:`FakeMjpegCamera.jpeg`
says which), blocks on the next frame as it would on the device, and sees the source vanish when the camera
is "unplugged" (:meth:`unplug` closes the listening socket and every open
stream) and come back when it is plugged in again (:meth:`plug`, same port).

Each frame is a flat colour that encodes its number modulo 256 in steps of 16
(red = 16 * (n mod 16) + 8, green = 16 * (n // 16 mod 16) + 8, blue = 128), so a
reader can tell which frame it got despite JPEG's loss: :func:`frame_number`
reads it back. With ``texture=True`` the rest of the picture is a fixed,
detailed pattern, so a frame compresses about as a camera's view of a room
does (tens of kB at 640x480) rather than to a few hundred bytes.
"""

from __future__ import annotations

import socket
import threading
import time

import cv2
import numpy as np

BOUNDARY = "teledorafakecamera"


def texture(width: int, height: int) -> np.ndarray:
    """A fixed BGR picture with detail at every scale (smoothed noise over gradients)."""
    rng = np.random.default_rng(46)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack([x / width * 200, y / height * 200, (x + y) / (width + height) * 200], -1)
    noise = cv2.GaussianBlur(rng.normal(0, 40, (height, width, 3)).astype(np.float32), (0, 0), 1.5)
    return np.clip(base + noise, 0, 255).astype(np.uint8)


def frame_image(number: int, width: int, height: int, background: np.ndarray | None = None) -> np.ndarray:
    """The BGR image of frame ``number``: its colour code fills the picture, or the
    centre half (where :func:`frame_number` reads) of ``background`` (:func:`texture`)."""
    textured = background is not None
    img = background.copy() if textured else np.empty((height, width, 3), np.uint8)
    code = (128, 16 * ((number // 16) % 16) + 8, 16 * (number % 16) + 8)  # BGR
    if textured:
        img[height // 4: 3 * height // 4, width // 4: 3 * width // 4] = code
    else:
        img[:, :] = code
    return img


def frame_number(rgb: np.ndarray) -> int:
    """The frame number (mod 256) an RGB image of :func:`frame_image` shows (centre pixels' mean)."""
    h, w = rgb.shape[:2]
    patch = rgb[h // 4: 3 * h // 4, w // 4: 3 * w // 4].reshape(-1, 3).mean(axis=0)
    return int(patch[1] // 16) * 16 + int(patch[0] // 16)


class FakeMjpegCamera:
    """Serves ``http://127.0.0.1:<port>/stream.mjpg``.

    Args:
        width, height: Frame size in pixels.
        rate_hz: Frames per second sent to each client.
        port: TCP port (0 picks a free one; kept across unplug/plug).
        textured: Detailed frames (a realistic JPEG size) instead of flat ones.
        quality: JPEG quality of the frames.
    """

    def __init__(self, width: int = 320, height: int = 240, rate_hz: float = 30.0, port: int = 0,
                 textured: bool = False, quality: int = 90) -> None:
        self.width, self.height, self.rate_hz = width, height, rate_hz
        self.port = port
        self.textured, self.quality = textured, quality
        self.frames_sent = 0
        self.bytes_sent = 0
        self.cut_short = 0  # the next this many frames are sent cut in half (a broken camera)
        self._jpegs: dict[int, bytes] = {}
        self._texture: np.ndarray | None = None
        self._number = 0
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None
        self._clients: list[socket.socket] = []
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def jpeg(self, number: int) -> bytes:
        """The JPEG file of frame ``number`` exactly as sent (it depends on ``number`` mod 256)."""
        key = number % 256
        if key not in self._jpegs:
            if self.textured and self._texture is None:
                self._texture = texture(self.width, self.height)
            image = frame_image(key, self.width, self.height, self._texture)
            ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, self.quality])
            if not ok:  # pragma: no cover - OpenCV encodes any 8-bit image
                raise RuntimeError("JPEG encoding failed")
            self._jpegs[key] = buf.tobytes()
        return self._jpegs[key]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/stream.mjpg"

    def plug(self) -> None:
        """Starts serving (again, on the same port)."""
        self._stop.clear()
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lst.bind(("127.0.0.1", self.port))
        lst.listen(4)
        self.port = lst.getsockname()[1]
        self._listener = lst
        t = threading.Thread(target=self._accept, args=(lst,), daemon=True, name="fake-camera-accept")
        t.start()
        self._threads.append(t)

    def unplug(self) -> None:
        """The camera goes: the listener and every stream close at once."""
        self._stop.set()
        if self._listener is not None:
            try:
                self._listener.close()
            except OSError:
                pass
            self._listener = None
        with self._lock:
            for c in self._clients:
                try:
                    c.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                c.close()
            self._clients.clear()
        for t in self._threads:
            t.join(5)
        self._threads.clear()

    close = unplug

    def _accept(self, lst: socket.socket) -> None:
        lst.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = lst.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with self._lock:
                self._clients.append(conn)
            t = threading.Thread(target=self._stream, args=(conn,), daemon=True, name="fake-camera-stream")
            t.start()
            self._threads.append(t)

    def _stream(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(2.0)
            request = b""
            while b"\r\n\r\n" not in request and len(request) < 8192:
                chunk = conn.recv(1024)
                if not chunk:
                    return
                request += chunk
            conn.sendall((f"HTTP/1.0 200 OK\r\nContent-Type: multipart/x-mixed-replace;boundary={BOUNDARY}\r\n"
                          "Cache-Control: no-cache\r\n\r\n").encode())
            period = 1.0 / self.rate_hz
            next_t = time.monotonic()
            while not self._stop.is_set():
                with self._lock:
                    number = self._number
                    self._number += 1
                    broken = self.cut_short > 0
                    self.cut_short -= broken
                body = self.jpeg(number)
                if broken:
                    body = body[: len(body) // 2]
                conn.sendall((f"--{BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: {len(body)}\r\n\r\n").encode()
                             + body + b"\r\n")
                self.frames_sent += 1
                self.bytes_sent += len(body)
                next_t += period
                delay = next_t - time.monotonic()
                if delay > 0:
                    self._stop.wait(delay)
                else:
                    next_t = time.monotonic()
        except OSError:
            return
        finally:
            try:
                conn.close()
            except OSError:
                pass
