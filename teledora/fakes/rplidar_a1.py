"""A fake RPLIDAR A1 on a pseudo-terminal, speaking the device's own bytes.

It answers GET_INFO, GET_HEALTH, SCAN / FORCE_SCAN, STOP and RESET, and streams
5-byte samples of a synthetic room (a rectangle with a round pillar) as the
device would: clockwise angles, start flag on the first sample of each turn,
check bit set, distance 0 where nothing is in range.

Failure modes a driver must survive are switches on the fake:
``streaming_at_start`` (a previous process exited without STOP),
``silent`` (answers nothing), ``stall_after_samples`` (stops mid-stream),
``garbage_every_samples`` (a stray byte now and then), ``health_status``
(warning / error), and ``burst_revolutions`` (dumps turns faster than real time,
overflowing a slow reader's buffer).

The encoding here is written bit by bit from the protocol description and is
kept separate from the parser under test.
"""

from __future__ import annotations

import math
import os
import select
import threading
import time
import tty
from dataclasses import dataclass


@dataclass
class SyntheticRoom:
    """Axis-aligned rectangular room with one round pillar, lidar pose inside it.

    Distances are from the lidar centre in metres; directions are world angles (CCW rad).
    """

    x_min: float = -3.0
    x_max: float = 3.0
    y_min: float = -2.5
    y_max: float = 2.5
    pillar_x: float = 1.5
    pillar_y: float = 0.5
    pillar_radius: float = 0.2
    lidar_x: float = 0.0
    lidar_y: float = 0.0
    lidar_yaw: float = 0.0

    def distance(self, world_angle: float) -> float:
        dx, dy = math.cos(world_angle), math.sin(world_angle)
        best = math.inf
        for wall, d, p in ((self.x_max, dx, self.lidar_x), (self.x_min, dx, self.lidar_x),
                           (self.y_max, dy, self.lidar_y), (self.y_min, dy, self.lidar_y)):
            if abs(d) > 1e-12:
                t = (wall - p) / d
                if t > 0:
                    best = min(best, t)
        # ray / circle
        ox, oy = self.lidar_x - self.pillar_x, self.lidar_y - self.pillar_y
        b = ox * dx + oy * dy
        c = ox * ox + oy * oy - self.pillar_radius ** 2
        disc = b * b - c
        if disc >= 0:
            t = -b - math.sqrt(disc)
            if t > 0:
                best = min(best, t)
        return best

    def distance_at_device_angle(self, theta_deg: float) -> float:
        """Distance seen at the device's clockwise angle ``theta_deg``."""
        return self.distance(self.lidar_yaw - math.radians(theta_deg))


def encode_sample(start: bool, quality: int, angle_deg: float, distance_mm: float) -> bytes:
    """One 5-byte measurement node."""
    angle_q6 = int(round(angle_deg * 64.0)) % (360 * 64)
    dist_q2 = max(0, min(0xFFFF, int(round(distance_mm * 4.0))))
    s_bit = 1 if start else 0
    b0 = ((quality & 0x3F) << 2) | ((1 - s_bit) << 1) | s_bit
    b1 = ((angle_q6 & 0x7F) << 1) | 0x01
    b2 = (angle_q6 >> 7) & 0xFF
    return bytes([b0, b1, b2, dist_q2 & 0xFF, (dist_q2 >> 8) & 0xFF])


def descriptor(length: int, multiple: bool, data_type: int) -> bytes:
    word = (length & 0x3FFFFFFF) | ((1 if multiple else 0) << 30)
    return bytes([0xA5, 0x5A]) + word.to_bytes(4, "little") + bytes([data_type])


INFO_PAYLOAD = bytes([0x18, 0x1D, 0x01, 0x07]) + bytes(range(0x10, 0x20))  # model 24, fw 1.29, hw 7
RESET_BANNER = b"RP LIDAR System.\r\nFirmware Ver 1.29 - rtm, HW Ver 7\r\nModel: 18\r\n"


class FakeRplidarA1:
    """The fake device. ``port`` is the path a driver opens.

    Args:
        room: What the lidar sees.
        scan_rate_hz: Turns per second.
        samples_per_second: Measurement rate (A1: ~2000).
        range_max_m: Farther than this reads as distance 0.
    """

    def __init__(
        self,
        room: SyntheticRoom | None = None,
        scan_rate_hz: float = 10.0,
        samples_per_second: float = 2000.0,
        range_max_m: float = 12.0,
        streaming_at_start: bool = False,
        silent: bool = False,
        stall_after_samples: int | None = None,
        garbage_every_samples: int | None = None,
        health_status: int = 0,
        health_error_code: int = 0,
        burst_revolutions: int = 0,
        angle_jitter_deg: float = 0.0,
    ) -> None:
        self.room = room or SyntheticRoom()
        self.scan_rate_hz = scan_rate_hz
        self.samples_per_second = samples_per_second
        self.range_max_m = range_max_m
        self.silent = silent
        self.stall_after_samples = stall_after_samples
        self.garbage_every_samples = garbage_every_samples
        self.health_status = health_status
        self.health_error_code = health_error_code
        self.burst_revolutions = burst_revolutions
        self.angle_jitter_deg = angle_jitter_deg
        self.requests: list[int] = []
        self.error: Exception | None = None
        self.samples_sent = 0
        self.scan_starts = 0
        self._streaming = streaming_at_start
        self._angle_deg = 137.0  # mid-turn, as after an unclean exit
        self._sample_index = 0
        self._master, self._slave = os.openpty()
        tty.setraw(self._slave)
        os.set_blocking(self._master, False)
        self._out = bytearray()
        self.port = os.ttyname(self._slave)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="fake-rplidar", daemon=True)

    def __enter__(self) -> "FakeRplidarA1":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stops the device thread and closes the pty; re-raises a thread failure."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        for fd in (self._master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.error is not None:
            raise RuntimeError(f"fake RPLIDAR thread failed: {self.error!r}") from self.error

    @property
    def streaming(self) -> bool:
        return self._streaming

    def _write(self, data: bytes) -> None:
        """Queues bytes for the line; ``_flush_out`` moves them as the pty accepts them."""
        self._out += data

    def _flush_out(self) -> None:
        while self._out and not self._stop.is_set():
            try:
                n = os.write(self._master, self._out[:4096])
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self._out.clear()
                return
            del self._out[:n]

    def _handle(self, buf: bytearray) -> None:
        """Consumes complete requests from ``buf``."""
        while len(buf) >= 2:
            if buf[0] != 0xA5:
                del buf[0]
                continue
            cmd = buf[1]
            if cmd & 0x80:  # request with payload: A5 cmd len payload checksum
                if len(buf) < 3 or len(buf) < 4 + buf[2]:
                    return
                del buf[: 4 + buf[2]]
            else:
                del buf[:2]
            self.requests.append(cmd)
            if self.silent:
                continue
            if cmd == 0x25:  # STOP: no answer; samples not yet on the line are never sent
                self._streaming = False
                self._out.clear()
            elif cmd == 0x40:  # RESET: reboot banner
                self._streaming = False
                self._out.clear()
                self._write(RESET_BANNER)
            elif self._streaming:
                continue  # the device ignores other requests while it streams
            elif cmd == 0x50:
                self._write(descriptor(20, False, 0x04) + INFO_PAYLOAD)
            elif cmd == 0x52:
                self._write(descriptor(3, False, 0x06) + bytes([self.health_status]) + self.health_error_code.to_bytes(2, "little"))
            elif cmd in (0x20, 0x21):
                self._write(descriptor(5, True, 0x81))
                self._streaming = True
                self.scan_starts += 1
                self._angle_deg = 0.0
                self._sample_index = 0

    def _next_samples(self, count: int) -> bytes:
        step = 360.0 * self.scan_rate_hz / self.samples_per_second
        out = bytearray()
        for _ in range(count):
            if self.stall_after_samples is not None and self.samples_sent >= self.stall_after_samples:
                break
            prev = self._angle_deg
            self._angle_deg = (self._angle_deg + step) % 360.0
            start = self._angle_deg < prev  # wrapped past 0: first sample of a new turn
            jitter = self.angle_jitter_deg * math.sin(self._sample_index * 1.7)
            angle = (self._angle_deg + jitter) % 360.0
            dist = self.room.distance_at_device_angle(angle)
            valid = dist <= self.range_max_m
            out += encode_sample(start, 47 if valid else 0, angle, dist * 1000.0 if valid else 0.0)
            self._sample_index += 1
            self.samples_sent += 1
            if self.garbage_every_samples and self.samples_sent % self.garbage_every_samples == 0:
                out += b"\x00"
        return bytes(out)

    def _run(self) -> None:
        try:
            self._serve()
        except Exception as exc:  # surfaced to the test through ``error``
            self.error = exc
            raise

    def _serve(self) -> None:
        buf = bytearray()
        last = time.monotonic()
        owed = 0.0
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._master], [self._master] if self._out else [], [], 0.005)
            except (OSError, ValueError):
                return
            if ready:
                try:
                    buf += os.read(self._master, 4096)
                except BlockingIOError:
                    pass
                except OSError:
                    return
                self._handle(buf)
            self._flush_out()
            now = time.monotonic()
            if self._streaming and not self.silent:
                if self.burst_revolutions:
                    per_turn = int(self.samples_per_second / self.scan_rate_hz)
                    self._write(self._next_samples(self.burst_revolutions * per_turn))
                    self.burst_revolutions = 0
                owed += (now - last) * self.samples_per_second
                n = int(owed)
                if n:
                    owed -= n
                    self._write(self._next_samples(n))
            else:
                owed = 0.0
            last = now
