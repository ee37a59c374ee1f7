"""Feetech STS servo bus over a serial port (the hardware backend of the drive nodes).

:class:`FeetechBus` sends protocol-0 requests (built by
:mod:`teledora.operators.feetech_protocol`) and collects the status replies
with a deadline. One request/reply exchange is a transaction; each holds an
exclusive ``flock`` on the port, so several processes (the base, lift and left
arm nodes all sit on the left bus) can share one bus without interleaving
bytes. A reply with a bad checksum is dropped and the transaction retried
(``retries`` times); a servo that does not answer raises
:class:`ServoTimeoutError` naming it.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import os
import select
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import serial

from teledora.operators import feetech_protocol as fp


class FeetechBusError(RuntimeError):
    """The bus cannot complete a transaction."""


class ServoTimeoutError(FeetechBusError):
    """A servo did not answer in time."""

    def __init__(self, servo_ids: list[int], what: str, port: str, timeout_s: float) -> None:
        self.servo_ids = servo_ids
        ids = ", ".join(str(i) for i in servo_ids)
        super().__init__(f"servo id {ids} on {port} did not answer {what} within {timeout_s * 1e3:.0f} ms")


class ReplyChecksumError(FeetechBusError):
    """Replies kept arriving with bad checksums after all retries."""


@dataclass
class BusStats:
    transactions: int = 0
    retries: int = 0
    timeouts: int = 0
    checksum_errors: int = 0
    status_errors: dict[int, int] = field(default_factory=dict)


class FeetechBus:
    """A Feetech bus on one serial port.

    Args:
        port: Serial device (``/dev/ttyACM0``) or pty path.
        baud_rate: Line rate (servos default to 1 Mbaud).
        timeout_s: Deadline for the replies of one transaction.
        retries: Extra attempts after a timeout or a corrupt reply.
    """

    def __init__(self, port: str, baud_rate: int = 1_000_000, timeout_s: float = 0.02, retries: int = 1) -> None:
        self.port = port
        self.baud_rate = baud_rate
        self.timeout_s = timeout_s
        self.retries = retries
        self.stats = BusStats()
        self._serial: serial.Serial | None = None
        self._fd = -1
        self._rx = bytearray()

    # ---- connection ----------------------------------------------------
    def connect(self) -> None:
        """Opens the port (raw, non-blocking reads)."""
        try:
            self._serial = serial.Serial(self.port, self.baud_rate, timeout=0, write_timeout=self.timeout_s)
        except OSError as exc:
            if exc.errno != errno.ENOTTY:
                raise FeetechBusError(f"cannot open {self.port}: {exc}") from exc
            # a pty (or some USB bridges) refuses the modem-control ioctls used for DTR
            self._serial = serial.Serial(self.port, self.baud_rate, timeout=0, write_timeout=self.timeout_s, dsrdtr=True)
        except serial.SerialException as exc:
            raise FeetechBusError(f"cannot open {self.port}: {exc}") from exc
        self._fd = self._serial.fileno()

    def close(self) -> None:
        """Waits for pending output (a final stop command) to leave, then closes."""
        if self._serial is not None:
            try:
                self._serial.flush()
            except (OSError, serial.SerialException):
                pass
            self._serial.close()
            self._serial = None
            self._fd = -1

    @property
    def connected(self) -> bool:
        return self._serial is not None

    # ---- transactions --------------------------------------------------
    def _collect(self, expected: list[int], deadline: float) -> tuple[dict[int, fp.Packet], bool]:
        """Reads replies until every expected id answered or the deadline passes."""
        got: dict[int, fp.Packet] = {}
        corrupt = False
        while len(got) < len(expected):
            while True:
                try:
                    pkt, used = fp.decode_packet(bytes(self._rx))
                except fp.FeetechChecksumError:
                    self.stats.checksum_errors += 1
                    corrupt = True
                    start = max(0, self._rx.find(fp.HEADER))
                    del self._rx[: start + (fp.frame_length(bytes(self._rx[start:])) or 2)]
                    continue
                except fp.FeetechProtocolError:
                    del self._rx[:2]
                    continue
                del self._rx[:used]
                if pkt is None:
                    break
                if pkt.servo_id in expected and pkt.servo_id not in got:
                    got[pkt.servo_id] = pkt
                    if pkt.code:
                        self.stats.status_errors[pkt.servo_id] = self.stats.status_errors.get(pkt.servo_id, 0) + 1
            if len(got) == len(expected) or corrupt:
                break  # a corrupt reply: retry at once rather than wait out the deadline
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready:
                try:
                    self._rx.extend(os.read(self._fd, 4096))
                except BlockingIOError:
                    pass
        return got, corrupt

    def transact(self, request: bytes, expected: list[int], what: str) -> dict[int, fp.Packet]:
        """Sends ``request`` and returns the status packets of ``expected`` ids.

        Raises:
            ServoTimeoutError: some expected servo never answered.
            ReplyChecksumError: replies were corrupt on every attempt.
            FeetechBusError: the port is closed or failed.
        """
        if self._serial is None:
            raise FeetechBusError(f"bus {self.port} is not connected")
        last_missing: list[int] = []
        corrupt = False
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats.retries += 1
            self.stats.transactions += 1
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
                try:
                    self._serial.reset_input_buffer()
                    self._rx.clear()
                    os.write(self._fd, request)
                    if not expected:
                        return {}
                    got, corrupt = self._collect(expected, time.monotonic() + self.timeout_s)
                finally:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
            except OSError as exc:
                raise FeetechBusError(f"bus {self.port} failed during {what}: {exc}") from exc
            if len(got) == len(expected):
                return got
            last_missing = [i for i in expected if i not in got]
        if corrupt:
            raise ReplyChecksumError(f"{what}: corrupt replies (bad checksum) from {self.port} after {self.retries + 1} attempts")
        self.stats.timeouts += 1
        raise ServoTimeoutError(last_missing, what, self.port, self.timeout_s)

    # ---- servo operations ----------------------------------------------
    def ping(self, servo_id: int) -> int:
        """Pings a servo and returns its model number."""
        self.transact(fp.ping(servo_id), [servo_id], "PING")
        return self.read(servo_id, "Model_Number")

    def read(self, servo_id: int, name: str) -> int:
        reg = fp.register(name)
        pkt = self.transact(fp.read(servo_id, reg.address, reg.size), [servo_id], f"READ {name}")[servo_id]
        return fp.decode_register(name, pkt.params)

    def write(self, servo_id: int, name: str, value: int) -> None:
        reg = fp.register(name)
        self.transact(fp.write(servo_id, reg.address, fp.encode_register(name, value)), [servo_id], f"WRITE {name}")

    def sync_read(self, servo_ids: Iterable[int], names: Iterable[str]) -> dict[int, dict[str, int]]:
        """One SYNC_READ of the contiguous block covering ``names``, decoded per servo."""
        ids, names = list(servo_ids), list(names)
        start, size = fp.span(names)
        replies = self.transact(fp.sync_read(ids, start, size), ids, f"SYNC_READ {','.join(names)}")
        out = {}
        for i in ids:
            block = replies[i].params
            if len(block) != size:
                raise FeetechBusError(f"servo id {i} answered {len(block)} bytes, expected {size}")
            out[i] = {n: fp.slice_register(n, start, block) for n in names}
        return out

    def sync_write(self, name: str, values: Mapping[int, int]) -> None:
        """One SYNC_WRITE of register ``name`` (no replies)."""
        reg = fp.register(name)
        data = {i: fp.encode_register(name, v) for i, v in values.items()}
        self.transact(fp.sync_write(reg.address, reg.size, data), [], f"SYNC_WRITE {name}")


def add_left_bus_args(parser: argparse.ArgumentParser) -> None:
    """Command-line overrides of the left bus settings in drive.yaml (base and lift share that bus)."""
    parser.add_argument("--port", default=None, help="serial port of the left bus (overrides drive.yaml)")
    parser.add_argument("--baud-rate", type=int, default=None)
    parser.add_argument("--timeout-s", type=float, default=None)


def left_bus_from_args(args: argparse.Namespace, config: Any) -> FeetechBus:
    """The left bus, from drive.yaml's ``buses.left`` with command-line overrides applied."""
    cfg = config.buses["left"]
    return FeetechBus(args.port or cfg.port, args.baud_rate or cfg.baud_rate, args.timeout_s or cfg.timeout_s)
