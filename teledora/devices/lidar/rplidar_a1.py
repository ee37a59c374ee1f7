"""One RPLIDAR A1 over USB serial: the lidar node's hardware device.

The serial port is opened, GET_INFO asked and the motor switched through
rplidar-roboticia (``RPLidar``), with the library's blocking reads replaced:
its response reader busy-waits forever, its scan iterator cannot time out and
its health answer reads the error code in the wrong byte order. Health, SCAN
and the sample stream therefore go through ``operators/lidar/rplidar_protocol.py``,
read in chunks with timeouts. Connecting (and :meth:`RplidarA1Backend.restart_scan`
after any fault) stops the lidar, waits, flushes the input buffer, checks
health and starts a fresh scan; a lidar that sends nothing for
``read_timeout_s`` raises :class:`LidarTimeoutError`.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from rplidar import RPLidar, RPLidarException

from teledora.operators.errors import DeviceError
from teledora.devices.device import Device
from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.lidar_config import HardwareConfig
from teledora.operators.lidar.revolution_assembler import RevolutionAssembler
from teledora.operators.lidar.rplidar_protocol import (
    CMD_GET_HEALTH,
    CMD_RESET,
    CMD_SCAN,
    CMD_STOP,
    DESCRIPTOR_LEN,
    HEALTH_LEN,
    MODE_MULTIPLE,
    MODE_SINGLE,
    SAMPLE_LEN,
    TYPE_HEALTH,
    TYPE_SCAN,
    DeviceHealth,
    RplidarProtocolError,
    SampleStreamParser,
    encode_request,
    expect_descriptor,
    parse_health,
)
from teledora.operators.lidar.scan_binning import ScanGrid, bin_revolution


class LidarTimeoutError(DeviceError, TimeoutError):
    """The lidar sent nothing for longer than the read timeout."""


class LidarHealthError(DeviceError, RuntimeError):
    """The lidar reports a hardware error (protection stop) even after a reset."""


class TimedRPLidar(RPLidar):
    """rplidar-roboticia's ``RPLidar`` with reads that end.

    The library's ``_read_response`` polls ``inWaiting()`` forever; this one
    reads with the serial timeout and raises :class:`LidarTimeoutError`. The
    A1 motor is switched with DTR, which a pseudo-terminal (the test fake)
    refuses; that refusal is counted, not fatal.
    """

    dtr_errors = 0

    def _read_response(self, dsize: int) -> bytes:
        data = self._serial.read(dsize)
        if len(data) != dsize:
            raise LidarTimeoutError(f"lidar answered {len(data)} of {dsize} bytes within {self.timeout} s")
        return data

    def _set_dtr(self, level: bool) -> None:
        try:
            self._serial.setDTR(level)
        except OSError:
            self.dtr_errors += 1

    def start_motor(self) -> None:
        self._set_pwm(self._motor_speed)  # A2/A3 command; the A1 ignores it
        self._set_dtr(False)  # A1: motor runs while DTR is low
        self.motor_running = True

    def stop_motor(self) -> None:
        self._set_pwm(0)
        self._set_dtr(True)
        self.motor_running = False

    @property
    def port_handle(self):
        """The open ``serial.Serial``."""
        return self._serial


class RplidarA1Backend(Device):
    """One A1: connect, read scans, recover, close (a sensor: it takes no commands).

    Args:
        port: Serial device (a udev symlink such as /dev/rplidar_front).
        frame_id: Frame of the published scans.
        grid: Angular grid and range limits.
        hw: Driver settings (timeouts, buffer limit).
        clock: Host clock, ns.
        sleep: Sleep function (injectable).
        poll_wait_s: Longest a single ``read`` waits for the first byte.
    """

    def __init__(
        self,
        port: str,
        frame_id: str,
        grid: ScanGrid,
        hw: HardwareConfig,
        clock: Callable[[], int] = time.time_ns,
        sleep: Callable[[float], None] = time.sleep,
        poll_wait_s: float = 0.05,
    ) -> None:
        self.port = port
        self.frame_id = frame_id
        self.grid = grid
        self.hw = hw
        self.clock = clock
        self.sleep = sleep
        self.poll_wait_s = poll_wait_s
        self.byte_ns = 10e9 / hw.baudrate  # 8N1: ten bit times per byte
        self.parser = SampleStreamParser()
        self.assembler = RevolutionAssembler(min_samples=hw.min_samples_per_revolution)
        self.lidar: TimedRPLidar | None = None
        self.info: dict[str, Any] = {}
        self.health = ""
        self.restarts = 0
        self.connects = 0
        self.overflows = 0
        self.timeouts = 0
        self._last_data_ns = 0

    def connect(self) -> None:
        """Opens the port and starts scanning (stop, settle, flush, health, scan)."""
        try:
            self.lidar = TimedRPLidar(self.port, self.hw.baudrate, timeout=self.hw.read_timeout_s)
        except RPLidarException as exc:
            raise ConnectionError(f"cannot open {self.port}: {exc}") from None
        self.connects += 1
        self._stop_and_flush()
        self.info = self._call(self.lidar.get_info)
        self.restart_scan("connect")

    def _call(self, fn, *args):
        """Runs a library call, turning its failure modes into clear exceptions."""
        try:
            result = fn(*args)
        except RPLidarException as exc:
            raise RplidarProtocolError(f"{fn.__name__}: {exc}") from None
        if isinstance(result, str):  # the library's "data in buffer" answer
            raise RplidarProtocolError(f"{fn.__name__}: {result.strip()}")
        return result

    def _stop_and_flush(self) -> None:
        port = self.lidar.port_handle
        port.write(encode_request(CMD_STOP))
        self.sleep(self.hw.stop_settle_s)
        port.reset_input_buffer()
        self.lidar.scanning[0] = False
        self.parser.reset()
        self.assembler.reset()

    def _request(self, command: int, length: int, mode: int, data_type: int) -> bytes:
        """Sends a request and reads its descriptor and (single-mode) payload, with timeouts."""
        port = self.lidar.port_handle
        port.write(encode_request(command))
        desc = port.read(DESCRIPTOR_LEN)
        if len(desc) != DESCRIPTOR_LEN:
            raise LidarTimeoutError(
                f"lidar {self.port} sent {len(desc)} of {DESCRIPTOR_LEN} descriptor bytes "
                f"within {port.timeout} s (request 0x{command:02x})"
            )
        expect_descriptor(desc, length, mode, data_type)
        if mode == MODE_MULTIPLE:
            return b""
        payload = port.read(length)
        if len(payload) != length:
            raise LidarTimeoutError(f"lidar {self.port} sent {len(payload)} of {length} payload bytes")
        return payload

    def check_health(self) -> DeviceHealth:
        """GET_HEALTH with our own parser (the library reads the error code big-endian)."""
        return parse_health(self._request(CMD_GET_HEALTH, HEALTH_LEN, MODE_SINGLE, TYPE_HEALTH))

    def restart_scan(self, reason: str) -> None:
        """Stops, flushes, checks health and starts a fresh scan."""
        port = self.lidar.port_handle
        port.timeout = self.hw.read_timeout_s
        self._stop_and_flush()
        health = self.check_health()
        if health.status_name == "error":
            # Protection stop: reboot the core (it prints a banner), then ask again.
            port.write(encode_request(CMD_RESET))
            self.sleep(self.hw.reset_settle_s)
            self._stop_and_flush()
            health = self.check_health()
            if health.status_name == "error":
                raise LidarHealthError(f"lidar {self.port} reports error code {health.error_code} after a reset")
        self.health = health.status_name + (f" ({health.error_code})" if health.error_code else "")
        self.lidar.start_motor()
        self._request(CMD_SCAN, SAMPLE_LEN, MODE_MULTIPLE, TYPE_SCAN)
        self.lidar.scanning = [True, SAMPLE_LEN, "normal"]
        port.timeout = self.poll_wait_s
        self._last_data_ns = self.clock()
        if reason != "connect":
            self.restarts += 1

    def read(self) -> list[LaserScan]:
        """Reads what has arrived; returns completed revolutions as scans.

        Raises:
            LidarTimeoutError: nothing arrived for ``read_timeout_s``.
        """
        port = self.lidar.port_handle
        waiting = port.in_waiting
        if waiting > self.hw.max_buffered_bytes:
            # We fell behind: old bytes are worthless and the buffer would only grow.
            self.overflows += 1
            self.restart_scan("overflow")
            return []
        chunk = port.read(max(waiting, 1))
        now = self.clock()
        if not chunk:
            if now - self._last_data_ns > self.hw.read_timeout_s * 1e9:
                self.timeouts += 1
                raise LidarTimeoutError(
                    f"lidar {self.port} sent nothing for {(now - self._last_data_ns) * 1e-9:.2f} s "
                    f"(read_timeout_s {self.hw.read_timeout_s})"
                )
            return []
        self._last_data_ns = now
        batch = self.parser.feed(chunk)
        if len(batch) == 0:
            return []
        # A sample arrived before the bytes read after it, at the line rate.
        behind = len(chunk) - batch.end_offset
        arrival = now - (behind * self.byte_ns).astype("int64")
        revs = self.assembler.add(batch.start, batch.angle_deg, batch.distance_m, batch.quality, arrival)
        return [bin_revolution(r, self.grid, self.frame_id) for r in revs]

    def close(self) -> None:
        """Stops the scan and the motor and closes the port (errors ignored)."""
        if self.lidar is None:
            return
        try:
            self.lidar.port_handle.write(encode_request(CMD_STOP))
            self.lidar.stop_motor()
        except (OSError, RPLidarException):
            pass
        self.lidar.disconnect()
        self.lidar = None

    def diagnostics_details(self) -> dict[str, Any]:
        return {
            "port": self.port,
            "health": self.health,
            "model": self.info.get("model"),
            "firmware": list(self.info.get("firmware", ())),
            "restarts": self.restarts,
            "connects": self.connects,
            "overflows": self.overflows,
            "timeouts": self.timeouts,
            "resync_bytes": self.parser.resync_bytes,
            "revolutions": self.assembler.revolutions,
            "dropped_short_revolutions": self.assembler.dropped_short,
            "dropped_slow_revolutions": self.assembler.dropped_slow,
            "dtr_errors": self.lidar.dtr_errors if self.lidar else 0,
        }


# the faults a node recovers from by restarting the scan or reopening the port
RECOVERABLE = (LidarTimeoutError, RplidarProtocolError, RPLidarException, OSError, ConnectionError, LidarHealthError)
