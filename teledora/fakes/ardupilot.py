"""A fake ArduPilot on 127.0.0.1 that speaks MAVLink 2 through pymavlink.

It behaves like the parts of ArduPilot Rover the flow bridge talks to:

* sends HEARTBEAT (MAV_TYPE_GROUND_ROVER, MAV_AUTOPILOT_ARDUPILOTMEGA) to the
  last peer it heard from;
* answers TIMESYNC requests with its boot time in ns (``tc1``) and the echoed
  ``ts1``, and sends its own requests, recording the peer's answers;
* answers REQUEST_MESSAGE(GPS_GLOBAL_ORIGIN) only when it has an origin; takes
  SET_GPS_GLOBAL_ORIGIN and confirms it with GPS_GLOBAL_ORIGIN;
* honours SET_MESSAGE_INTERVAL (COMMAND_ACK) for LOCAL_POSITION_NED, ATTITUDE
  and EKF_STATUS_REPORT; LOCAL_POSITION_NED only once an origin exists;
* integrates its own position estimate from OPTICAL_FLOW ``flow_rate_x/y``
  (FLOW_POS_X/Y/Z offset, ArduPilot's sign convention, height from
  DISTANCE_SENSOR) and the yaw rate of its "IMU" (set by the test);
* survives garbage datagrams (counted), can go silent (link loss) and reboot
  (its boot clock restarts).

Its flow inversion is written from ArduPilot's equations in FRD axes,
independently of teledora's flow model, so the two check each other.
"""

from __future__ import annotations

import math
import os
import select
import socket
import threading
import time
from collections import Counter
from typing import Callable

from pymavlink.dialects.v20 import ardupilotmega as mavlink

EKF_FLAGS_HEALTHY = 1 | 2 | 8 | 16 | 64  # attitude, vel horiz, pos horiz rel/abs, pos vert agl


class _Sender:
    """File-like object pymavlink writes packed messages into."""

    def __init__(self, fake: "FakeArduPilot") -> None:
        self.fake = fake

    def write(self, buf: bytes) -> None:
        if self.fake.silent:
            return
        if self.fake.master_fd is not None:
            os.write(self.fake.master_fd, bytes(buf))
        elif self.fake.peer is not None:
            self.fake.sock.sendto(bytes(buf), self.fake.peer)


class FakeArduPilot:
    """Fake autopilot bound to 127.0.0.1 on a free UDP port (``.port``), or behind a
    pseudo-terminal (``serial=True``: open ``.device`` like a USB serial port).

    Args:
        flow_pos_frd: FLOW_POS_X/Y/Z (m, FRD body axes).
        has_gps_origin: Starts with an EKF origin (as with a GPS fix).
        heartbeat_period_s: Period of its heartbeat (short for fast tests).
        boot_clock_ns: Its boot clock (ns since boot); default: monotonic since start.
        report_delay_ms: Age of each LOCAL_POSITION_NED/ATTITUDE when sent (their
            ``time_boot_ms`` lies this far in the past), like an estimator's output delay.
    """

    def __init__(self, flow_pos_frd: tuple[float, float, float] = (0.08, -0.05, -0.05), has_gps_origin: bool = False,
                 heartbeat_period_s: float = 0.1, boot_clock_ns: Callable[[], int] | None = None,
                 timesync_period_s: float = 0.2, report_delay_ms: int = 0, serial: bool = False) -> None:
        self.report_delay_ms = report_delay_ms
        self.flow_pos_frd = flow_pos_frd
        self.heartbeat_period_s = heartbeat_period_s
        self.timesync_period_s = timesync_period_s
        self._t0 = time.monotonic_ns()
        self._boot_offset_ns = 0
        self._boot_clock = boot_clock_ns or (lambda: time.monotonic_ns() - self._t0)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.005)
        self.port = self.sock.getsockname()[1]
        self.peer: tuple[str, int] | None = None
        self.master_fd: int | None = None
        self.device = ""
        if serial:
            self.master_fd, slave_fd = os.openpty()
            self.device = os.ttyname(slave_fd)
            self._slave_fd = slave_fd  # kept open so the master never sees a hang-up
        self.silent = False
        self.mav = mavlink.MAVLink(_Sender(self), srcSystem=1, srcComponent=1)
        self.mav.robust_parsing = True
        self._rx = mavlink.MAVLink(None)
        self._rx.robust_parsing = True
        self.lock = threading.Lock()
        self.received: Counter[str] = Counter()
        self.garbage = 0
        self.origin: tuple[int, int, int] | None = (488566000, 23522000, 35000) if has_gps_origin else None
        self.origin_sets = 0
        self.intervals_us: dict[int, int] = {}
        self.flows: list = []
        self.distance_sensors: list = []
        self.height_m = abs(flow_pos_frd[2])
        self.imu_yaw_rate_frd = 0.0
        self.north = self.east = self.yaw_ned = 0.0
        self.vn = self.ve = 0.0
        self.peer_timesync_offsets_ns: list[int] = []
        self._last_flow_us: int | None = None
        self._next: dict[str, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fake-ardupilot", daemon=True)

    # -- control ---------------------------------------------------------------------------
    def boot_ns(self) -> int:
        return self._boot_clock() - self._boot_offset_ns

    def start(self) -> "FakeArduPilot":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.sock.close()
        if self.master_fd is not None:
            os.close(self.master_fd)
            os.close(self._slave_fd)

    def __enter__(self) -> "FakeArduPilot":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def reboot(self) -> None:
        """Restarts: boot clock back to zero, origin, streams and estimate forgotten."""
        with self.lock:
            self._boot_offset_ns = self._boot_clock()
            self.origin = None
            self.intervals_us.clear()
            self.north = self.east = self.yaw_ned = 0.0
            self._last_flow_us = None

    # -- loop ------------------------------------------------------------------------------
    def _receive(self) -> tuple[bytes, tuple[str, int] | None]:
        if self.master_fd is not None:
            ready, _, _ = select.select([self.master_fd], [], [], 0.005)
            return (os.read(self.master_fd, 4096), ("pty", 0)) if ready else (b"", None)
        try:
            return self.sock.recvfrom(4096)
        except (socket.timeout, BlockingIOError):
            return b"", None

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                data, addr = self._receive()
            except OSError:
                return
            with self.lock:
                if data and not self.silent:
                    self._handle_datagram(data, addr)
                if not self.silent:
                    self._periodic()

    def _due(self, key: str, period_s: float) -> bool:
        now = time.monotonic()
        if now >= self._next.get(key, 0.0):
            self._next[key] = now + period_s
            return True
        return False

    def _periodic(self) -> None:
        if self.peer is None:
            return
        boot_ms = (self.boot_ns() // 1_000_000 - self.report_delay_ms) & 0xFFFFFFFF
        if self._due("hb", self.heartbeat_period_s):
            self.mav.heartbeat_send(mavlink.MAV_TYPE_GROUND_ROVER, mavlink.MAV_AUTOPILOT_ARDUPILOTMEGA,
                                    mavlink.MAV_MODE_FLAG_CUSTOM_MODE_ENABLED, 0, mavlink.MAV_STATE_ACTIVE)
        if self._due("ts", self.timesync_period_s):
            self.mav.timesync_send(0, self.boot_ns())
        iv = self.intervals_us
        if mavlink.MAVLINK_MSG_ID_ATTITUDE in iv and self._due("att", iv[mavlink.MAVLINK_MSG_ID_ATTITUDE] * 1e-6):
            self.mav.attitude_send(boot_ms, 0.0, 0.0, self.yaw_ned, 0.0, 0.0, self.imu_yaw_rate_frd)
        lpn = mavlink.MAVLINK_MSG_ID_LOCAL_POSITION_NED
        if lpn in iv and self.origin is not None and self._due("lpn", iv[lpn] * 1e-6):
            self.mav.local_position_ned_send(boot_ms, self.north, self.east, 0.0, self.vn, self.ve, 0.0)
        esr = mavlink.MAVLINK_MSG_ID_EKF_STATUS_REPORT
        if esr in iv and self._due("esr", iv[esr] * 1e-6):
            flags = EKF_FLAGS_HEALTHY if self.origin is not None else 1 | 2 | 1024
            self.mav.ekf_status_report_send(flags, 0.1, 0.1, 0.1, 0.0, 0.0)

    def _handle_datagram(self, data: bytes, addr: tuple[str, int]) -> None:
        try:
            msgs = self._rx.parse_buffer(data) or []
        except Exception:  # pymavlink raises on some malformed input even when robust
            msgs = []
        good = [m for m in msgs if m.get_type() != "BAD_DATA"]
        if not good:
            self.garbage += 1
            return
        for m in good:
            self.received[m.get_type()] += 1
            if m.get_type() == "HEARTBEAT":
                self.peer = addr
            handler = getattr(self, f"_on_{m.get_type().lower()}", None)
            if handler is not None:
                handler(m)

    # -- handlers --------------------------------------------------------------------------
    def _on_timesync(self, m) -> None:
        if m.tc1 == 0:
            self.mav.timesync_send(self.boot_ns(), m.ts1)
        else:  # answer to our own request: tc1 is the peer's clock
            now = self.boot_ns()
            if 0 <= now - m.ts1 < 1_000_000_000:
                self.peer_timesync_offsets_ns.append(m.tc1 - (m.ts1 + now) // 2)

    def _on_set_gps_global_origin(self, m) -> None:
        self.origin = (m.latitude, m.longitude, m.altitude)
        self.origin_sets += 1
        self.mav.gps_global_origin_send(*self.origin, 0)

    def _on_command_long(self, m) -> None:
        if m.command == mavlink.MAV_CMD_SET_MESSAGE_INTERVAL:
            msg_id, interval = int(m.param1), int(m.param2)
            if interval > 0:
                self.intervals_us[msg_id] = interval
            else:
                self.intervals_us.pop(msg_id, None)
            self.mav.command_ack_send(m.command, mavlink.MAV_RESULT_ACCEPTED)
        elif m.command == mavlink.MAV_CMD_REQUEST_MESSAGE:
            if int(m.param1) == mavlink.MAVLINK_MSG_ID_GPS_GLOBAL_ORIGIN and self.origin is not None:
                self.mav.command_ack_send(m.command, mavlink.MAV_RESULT_ACCEPTED)
                self.mav.gps_global_origin_send(*self.origin, 0)
            else:
                self.mav.command_ack_send(m.command, mavlink.MAV_RESULT_FAILED)
        else:
            self.mav.command_ack_send(m.command, mavlink.MAV_RESULT_UNSUPPORTED)

    def _on_distance_sensor(self, m) -> None:
        self.distance_sensors.append(m)
        if m.orientation == mavlink.MAV_SENSOR_ROTATION_PITCH_270:
            self.height_m = m.current_distance / 100.0

    def _on_optical_flow(self, m) -> None:
        self.flows.append(m)
        if self._last_flow_us is None:
            self._last_flow_us = m.time_usec
            return
        dt = (m.time_usec - self._last_flow_us) * 1e-6
        self._last_flow_us = m.time_usec
        if not 0.0 < dt < 0.5 or m.quality < 50:
            return
        # ArduPilot (FRD): flow_x = -v_s,y / h, flow_y = v_s,x / h on a level floor.
        h = self.height_m
        vsx, vsy = m.flow_rate_y * h, -m.flow_rate_x * h
        px, py, _ = self.flow_pos_frd
        r = self.imu_yaw_rate_frd
        vx, vy = vsx + r * py, vsy - r * px  # remove w x r
        self.yaw_ned = math.remainder(self.yaw_ned + r * dt, 2 * math.pi)
        c, s = math.cos(self.yaw_ned), math.sin(self.yaw_ned)
        self.vn, self.ve = c * vx - s * vy, s * vx + c * vy
        self.north += self.vn * dt
        self.east += self.ve * dt
