"""A fake RPLIDAR A1 on a pseudo-terminal, speaking the device's own bytes.

It answers GET_INFO, GET_HEALTH, SCAN / FORCE_SCAN, STOP and RESET, and streams
5-byte samples of a synthetic room (a rectangle with a round pillar) as the
device would: clockwise angles, start flag on the first sample of each turn,
check bit set, distance 0 where nothing is in range.

Failure modes a driver must survive are switches on the fake:
``streaming_at_start`` (a previous process exited without STOP),
``silent`` (answers nothing), ``stall_after_samples`` (stops mid-stream),
``garbage_every_samples`` (a stray byte now and then), ``check_bit_clear_every_samples``
(a sample whose check bit C is 0, carrying a distance ``CHECK_FAULT_DISTANCE_MM``
the room never gives, so a driver that took it would show it),
``distance_spike_every_samples`` (a sample ``distance_spike_m`` off, angle and
check bits intact: what one flipped high distance bit gives), :meth:`inject_garbage`
(a burst of random bytes), ``bit_error_rate`` (one flipped bit in that
fraction of the sample bytes), ``scan_rate_hz`` changed while streaming (0: the
motor is frozen but samples keep coming; 0.8: a motor browning out),
``health_status`` (warning / error), ``burst_revolutions`` (dumps turns faster
than real time, overflowing a slow reader's buffer), and :meth:`unplug` /
:meth:`replug` (the port vanishes, then comes back at the same path, as a udev
symlink does).

Timing: samples are measured on the device's own clock, one every
``1 / samples_per_second`` from the SCAN request, and written as soon as they
are due (in bursts of a few ms, like a USB serial bridge). The true host time
(``time.time_ns``) at which each turn passed 0 degrees is kept in
``turn_starts_ns`` so a test can check the driver's stamps against it.

The encoding here is written bit by bit from the protocol description and is
kept separate from the parser under test.
"""

from __future__ import annotations

import collections
import math
import os
import random
import select
import shutil
import tempfile
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
CHECK_FAULT_DISTANCE_MM = 9999.0  # the distance of the samples sent with their check bit clear

RESET_BANNER = b"RP LIDAR System.\r\nFirmware Ver 1.29 - rtm, HW Ver 7\r\nModel: 18\r\n"


class FakeRplidarA1:
    """The fake device. ``port`` is the path a driver opens (a symlink to the pty).

    Args:
        room: What the lidar sees.
        scan_rate_hz: Turns per second (may be changed while streaming; 0 = frozen motor).
        samples_per_second: Measurement rate (A1: ~2000; 10 kB/s, i.e. ~100 us per
            byte, slower than the 86.8 us per byte of the 115200 baud line).
        range_max_m: Farther than this reads as distance 0.
        bit_error_rate: Fraction of sample bytes that get one random bit flipped.
        check_bit_clear_every_samples: Every this many samples, one is sent with its
            check bit clear (angle and flags right, distance ``CHECK_FAULT_DISTANCE_MM``).
        distance_spike_every_samples: Every this many samples, one (with a return) is
            sent ``distance_spike_m`` off its true distance.
        distance_spike_m: The offset of those samples (negative: nearer).
        seed: Seed of the random faults (garbage bytes, bit errors).
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
        bit_error_rate: float = 0.0,
        check_bit_clear_every_samples: int | None = None,
        distance_spike_every_samples: int | None = None,
        distance_spike_m: float = -1.024,
        seed: int = 0,
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
        self.bit_error_rate = bit_error_rate
        self.check_bit_clear_every_samples = check_bit_clear_every_samples
        self.check_bit_cleared = 0
        self.distance_spike_every_samples = distance_spike_every_samples
        self.distance_spike_m = distance_spike_m
        self.distance_spikes = 0
        self.requests: list[int] = []
        self.request_times_ns: list[int] = []  # host time each request was read
        self.error: Exception | None = None
        self.samples_sent = 0
        self.scan_starts = 0
        self.corrupted_bytes = 0
        self.garbage_bytes = 0
        # true host time of each turn's 0-degree crossing (bounded: a long run keeps the newest)
        self.turn_starts_ns: collections.deque[int] = collections.deque(maxlen=100_000)
        # (true angle deg, true distance mm) of every sample sent, newest kept, for error counts
        self.sent: collections.deque[tuple[float, float]] = collections.deque(maxlen=200_000)
        self._rng = random.Random(seed)
        self._streaming = streaming_at_start
        self._angle_deg = 137.0  # mid-turn, as after an unclean exit
        self._sample_index = 0
        self._t0_ns = time.time_ns()
        self._due_base = 0  # samples already accounted for before the clock restarted
        self._pending_garbage = 0
        self._dir = tempfile.mkdtemp(prefix="fake-rplidar-")
        self.port = os.path.join(self._dir, "rplidar")
        self._master: int | None = None
        self._slave: int | None = None
        self._lock = threading.Lock()
        self._plug()
        self._out = bytearray()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-rplidar", daemon=True)

    def __enter__(self) -> "FakeRplidarA1":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        self._thread.start()

    def _plug(self) -> None:
        master, slave = os.openpty()
        tty.setraw(slave)
        os.set_blocking(master, False)
        link_tmp = self.port + ".new"
        os.symlink(os.ttyname(slave), link_tmp)
        os.replace(link_tmp, self.port)
        with self._lock:
            self._master, self._slave = master, slave

    def _unplug_fds(self) -> None:
        with self._lock:
            fds, self._master, self._slave = (self._master, self._slave), None, None
        for fd in fds:
            if fd is not None:
                try:
                    os.close(fd)
                except OSError:
                    pass

    def unplug(self) -> None:
        """The USB cable is pulled: the port disappears and an open one fails."""
        self._unplug_fds()
        try:
            os.unlink(self.port)
        except FileNotFoundError:
            pass
        self._streaming = False

    def replug(self) -> None:
        """The cable is back: a fresh pty at the same path; the device has rebooted (idle)."""
        self._out.clear()
        self._streaming = False
        self._plug()

    @property
    def plugged(self) -> bool:
        return self._master is not None

    def inject_garbage(self, count: int) -> None:
        """Puts ``count`` random bytes on the line after the sample being sent."""
        self._pending_garbage += count

    def close(self) -> None:
        """Stops the device thread and closes the pty; re-raises a thread failure."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        self._unplug_fds()
        shutil.rmtree(self._dir, ignore_errors=True)
        if self.error is not None:
            raise RuntimeError(f"fake RPLIDAR thread failed: {self.error!r}") from self.error

    @property
    def streaming(self) -> bool:
        return self._streaming

    def _write(self, data: bytes) -> None:
        """Queues bytes for the line; ``_flush_out`` moves them as the pty accepts them."""
        self._out += data

    def _flush_out(self, master: int) -> None:
        while self._out and not self._stop.is_set():
            try:
                n = os.write(master, self._out[:4096])
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
            self.request_times_ns.append(time.time_ns())
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
                self._restart_clock()

    def _restart_clock(self) -> None:
        self._t0_ns = time.time_ns()
        self._sample_index = 0
        self._due_base = 0

    def _sample_time_ns(self, index: int) -> float:
        """True host time at which sample ``index`` (1-based since SCAN) was measured."""
        return self._t0_ns + (index - self._due_base) * 1e9 / self.samples_per_second

    def _corrupt(self, data: bytes) -> bytes:
        if not self.bit_error_rate:
            return data
        out = bytearray(data)
        for i in range(len(out)):
            if self._rng.random() < self.bit_error_rate:
                out[i] ^= 1 << self._rng.randrange(8)
                self.corrupted_bytes += 1
        return bytes(out)

    def _next_samples(self, count: int) -> bytes:
        out = bytearray()
        for _ in range(count):
            if self.stall_after_samples is not None and self.samples_sent >= self.stall_after_samples:
                break
            step = 360.0 * self.scan_rate_hz / self.samples_per_second
            prev = self._angle_deg
            self._angle_deg = (self._angle_deg + step) % 360.0
            self._sample_index += 1
            start = self._angle_deg < prev  # wrapped past 0: first sample of a new turn
            if start:
                # the turn began when the angle passed 360, a fraction of a sample period ago
                before = self._angle_deg / step
                self.turn_starts_ns.append(int(self._sample_time_ns(self._sample_index) - before * 1e9 / self.samples_per_second))
            jitter = self.angle_jitter_deg * math.sin(self._sample_index * 1.7)
            angle = (self._angle_deg + jitter) % 360.0
            dist = self.room.distance_at_device_angle(angle)
            valid = dist <= self.range_max_m
            dist_mm = dist * 1000.0 if valid else 0.0
            self.sent.append((angle, dist_mm))
            spike_every = self.distance_spike_every_samples
            if valid and spike_every and (self.samples_sent + 1) % spike_every == 0:
                dist_mm = max(dist_mm + self.distance_spike_m * 1000.0, 1.0)
                self.distance_spikes += 1
            every = self.check_bit_clear_every_samples
            if every and (self.samples_sent + 1) % every == 0:
                window = bytearray(encode_sample(start, 47, angle, CHECK_FAULT_DISTANCE_MM))
                window[1] &= 0xFE
                out += self._corrupt(bytes(window))
                self.check_bit_cleared += 1
            else:
                out += self._corrupt(encode_sample(start, 47 if valid else 0, angle, dist_mm))
            self.samples_sent += 1
            if self.garbage_every_samples and self.samples_sent % self.garbage_every_samples == 0:
                out += b"\x00"
                self.garbage_bytes += 1
            if self._pending_garbage:
                out += bytes(self._rng.randrange(256) for _ in range(self._pending_garbage))
                self.garbage_bytes += self._pending_garbage
                self._pending_garbage = 0
        return bytes(out)

    def _run(self) -> None:
        try:
            self._serve()
        except Exception as exc:  # surfaced to the test through ``error``
            self.error = exc
            raise

    def _serve(self) -> None:
        buf = bytearray()
        while not self._stop.is_set():
            with self._lock:
                master = self._master
            if master is None:  # unplugged
                buf.clear()
                time.sleep(0.005)
                continue
            try:
                ready, _, _ = select.select([master], [master] if self._out else [], [], 0.002)
            except (OSError, ValueError):
                time.sleep(0.005)
                continue
            if ready:
                try:
                    buf += os.read(master, 4096)
                except BlockingIOError:
                    pass
                except OSError:
                    time.sleep(0.005)
                    continue
                self._handle(buf)
            if self._streaming and not self.silent:
                if self.burst_revolutions:
                    per_turn = int(self.samples_per_second / max(self.scan_rate_hz, 1e-3))
                    n = self.burst_revolutions * per_turn
                    self._write(self._next_samples(n))
                    self._due_base += n  # burst samples are extra: the clock keeps its pace
                    self.burst_revolutions = 0
                due = int((time.time_ns() - self._t0_ns) * 1e-9 * self.samples_per_second) + self._due_base
                n = due - self._sample_index
                if n > 0:
                    self._write(self._next_samples(n))
                    if self.stall_after_samples is not None and self.samples_sent >= self.stall_after_samples:
                        self._sample_index = due  # a stalled device's clock runs on
            self._flush_out(master)
