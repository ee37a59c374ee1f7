"""Feetech STS servo bus over a serial port (the hardware backend of the drive nodes).

:class:`FeetechBus` sends protocol-0 requests (built by
:mod:`teledora.operators.drive.feetech_protocol`) and collects the status replies
with a deadline. One request/reply exchange is a transaction; each holds an
exclusive ``flock`` on the port, so several processes (the base, lift and left
arm nodes all sit on the left bus) can share one bus without interleaving
bytes. A reply with a bad checksum, or with another parameter count than the
request asks for, is dropped and the transaction retried (``retries`` times); a
servo that does not answer raises :class:`ServoTimeoutError` naming it.

Status packets carry no trace of the request they answer, so a reply that
arrives after its transaction gave up could pass for the next one's. After an
attempt that timed out or saw bad bytes the bus is *dirty*: before the next
request it reads and discards (and counts) what arrives until the servos that
owed a reply have sent it or had ``settle_max_s`` to do so, and the line has
then been quiet for a guard interval. Clean transactions never wait.
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

from teledora.operators.errors import DeviceError
from teledora.operators.drive import feetech_protocol as fp
# Quiet-line guard before a request on a dirty bus. A servo starts its reply at
# most RETURN_DELAY after the request or the previous servo's reply (register 7,
# 2 µs units, at most 254); a USB bridge may then hand the whole frame over only
# once it is on the wire, in 1 ms USB frames. No byte for longer than that: no
# reply is in flight.
RETURN_DELAY_MAX_S = 254 * 2e-6
USB_FRAME_S = 1e-3
STATUS_OVERHEAD = 6  # header 2, id, length, error, checksum
MAX_PARAMS = 250  # longest reply when the request does not say
BITS_PER_BYTE = 10  # start + 8 data + stop


class FeetechBusError(DeviceError, RuntimeError):
    """The bus cannot complete a transaction."""


class ServoTimeoutError(FeetechBusError):
    """A servo did not answer in time."""

    def __init__(self, servo_ids: list[int], what: str, port: str, timeout_s: float) -> None:
        self.servo_ids = servo_ids
        ids = ", ".join(str(i) for i in servo_ids)
        super().__init__(f"servo id {ids} on {port} did not answer {what} within {timeout_s * 1e3:.0f} ms")


class ReplyChecksumError(FeetechBusError):
    """Replies kept arriving with bad checksums after all retries."""


class ReplyLengthError(FeetechBusError):
    """Replies kept carrying another parameter count than requested after all retries."""


@dataclass
class BusStats:
    transactions: int = 0
    retries: int = 0
    timeouts: int = 0
    checksum_errors: int = 0
    length_errors: int = 0  # status packets with the wrong parameter count, rejected
    settles: int = 0  # requests that first waited for a dirty bus to go quiet
    late_replies: int = 0  # status packets discarded while settling
    late_bytes: int = 0  # bytes discarded while settling (those packets included)
    unsettled: int = 0  # settles cut at their bound with the line still talking
    status_errors: dict[int, int] = field(default_factory=dict)

    COUNTERS = ("transactions", "retries", "timeouts", "checksum_errors", "length_errors", "late_replies", "unsettled")

    @classmethod
    def totals(cls, stats: "list[BusStats]") -> dict[str, int]:
        """The counters a node reports in diagnostics, summed over its buses."""
        return {name: sum(getattr(s, name) for s in stats) for name in cls.COUNTERS}


class FeetechBus:
    """A Feetech bus on one serial port.

    Args:
        port: Serial device (``/dev/ttyACM0``) or pty path.
        baud_rate: Line rate (servos default to 1 Mbaud).
        timeout_s: Deadline for the replies of one transaction.
        retries: Extra attempts after a timeout or a corrupt reply.
        settle_max_s: After a failed attempt, how long its silent servos may
            still answer late (default ``timeout_s``); bounds the settle wait.
    """

    def __init__(self, port: str, baud_rate: int = 1_000_000, timeout_s: float = 0.02, retries: int = 1,
                 settle_max_s: float | None = None) -> None:
        self.port = port
        self.baud_rate = baud_rate
        self.timeout_s = timeout_s
        self.retries = retries
        self.settle_max_s = timeout_s if settle_max_s is None else settle_max_s
        self.stats = BusStats()
        self._serial: serial.Serial | None = None
        self._fd = -1
        self._rx = bytearray()
        # dirty-bus state: None when clean, else (owed ids, when they are given up, guard)
        self._dirty: tuple[set[int], float, float] | None = None

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
    def _collect(self, expected: list[int], deadline: float,
                 reply_size: int | None) -> tuple[dict[int, fp.Packet], set[int], bool, dict[int, int]]:
        """Reads replies until every expected id answered or the deadline passes.

        Returns (accepted packets, ids heard from at all, corrupt bytes seen,
        {id: parameter count} of replies rejected for their length).
        """
        got: dict[int, fp.Packet] = {}
        heard: set[int] = set()
        wrong_length: dict[int, int] = {}
        corrupt = False
        while len(heard) < len(expected):
            while True:
                try:
                    pkt, used = fp.decode_packet(bytes(self._rx))
                except fp.FeetechChecksumError:
                    self.stats.checksum_errors += 1
                    corrupt = True
                    start = max(0, fp.header_index(self._rx))  # past repeated 0xFF: where its id and length are
                    if len(self._rx) > start + 2 and self._rx[start + 2] in expected:
                        heard.add(self._rx[start + 2])  # its reply is in, though unreadable
                    del self._rx[: start + (fp.frame_length(bytes(self._rx[start:])) or 2)]
                    continue
                except fp.FeetechProtocolError:
                    del self._rx[:2]
                    continue
                del self._rx[:used]
                if pkt is None:
                    break
                if pkt.servo_id not in expected or pkt.servo_id in heard:
                    continue
                heard.add(pkt.servo_id)
                if reply_size is not None and len(pkt.params) != reply_size:
                    # not the answer to this request (a stale one, or garbled): not answered this attempt
                    self.stats.length_errors += 1
                    wrong_length[pkt.servo_id] = len(pkt.params)
                    continue
                got[pkt.servo_id] = pkt
                if pkt.code:
                    self.stats.status_errors[pkt.servo_id] = self.stats.status_errors.get(pkt.servo_id, 0) + 1
            if len(heard) == len(expected) or corrupt:
                break  # a corrupt reply: retry (once the line is quiet) rather than wait out the deadline
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([self._fd], [], [], left)
            if ready:
                try:
                    self._rx.extend(os.read(self._fd, 4096))
                except BlockingIOError:
                    pass
        return got, heard, corrupt, wrong_length

    def _settle(self) -> None:
        """Discards late bytes until the dirty bus has gone quiet (see the module doc)."""
        assert self._dirty is not None
        owed, owed_until, guard = self._dirty
        self._dirty = None
        self.stats.settles += 1
        start = last_rx = time.monotonic()
        hard_end = start + self.settle_max_s + guard  # a line that never goes quiet
        late = self._rx  # what the failed attempt left unread counts as late too
        self.stats.late_bytes += len(late)
        while True:
            while True:  # count (and strip) the whole packets received so far
                try:
                    pkt, used = fp.decode_packet(bytes(late))
                except fp.FeetechProtocolError:
                    del late[: max(2, late.find(fp.HEADER) + 2)]
                    continue
                del late[:used]
                if pkt is None:
                    break
                self.stats.late_replies += 1
                owed.discard(pkt.servo_id)
            now = time.monotonic()
            wait_until = max(last_rx + guard, owed_until if owed else 0.0)
            if now >= wait_until:
                break
            if now >= hard_end:
                self.stats.unsettled += 1
                break
            ready, _, _ = select.select([self._fd], [], [], min(wait_until, hard_end) - now)
            if ready:
                try:
                    chunk = os.read(self._fd, 4096)
                except BlockingIOError:
                    chunk = b""
                if chunk:
                    last_rx = time.monotonic()
                    self.stats.late_bytes += len(chunk)
                    late.extend(chunk)

    def _guard_s(self, reply_size: int | None) -> float:
        """Quiet time that proves no reply of ``reply_size`` parameters is still coming."""
        frame = STATUS_OVERHEAD + (MAX_PARAMS if reply_size is None else reply_size)
        return RETURN_DELAY_MAX_S + USB_FRAME_S + frame * BITS_PER_BYTE / self.baud_rate

    def transact(self, request: bytes, expected: list[int], what: str,
                 reply_size: int | None = None) -> dict[int, fp.Packet]:
        """Sends ``request`` and returns the status packets of ``expected`` ids.

        Args:
            reply_size: Parameter count every reply must have (None: any);
                a reply with another count is rejected.

        Raises:
            ServoTimeoutError: some expected servo never answered.
            ReplyChecksumError: replies were corrupt on every attempt.
            ReplyLengthError: replies had the wrong parameter count on every attempt.
            FeetechBusError: the port is closed or failed.
        """
        if self._serial is None:
            raise FeetechBusError(f"bus {self.port} is not connected")
        silent: list[int] = []
        corrupt = False
        wrong_length: dict[int, int] = {}
        for attempt in range(self.retries + 1):
            if attempt:
                self.stats.retries += 1
            self.stats.transactions += 1
            try:
                fcntl.flock(self._fd, fcntl.LOCK_EX)
                try:
                    if self._dirty is not None:
                        self._settle()
                    self._serial.reset_input_buffer()
                    self._rx.clear()
                    os.write(self._fd, request)
                    if not expected:
                        return {}
                    got, heard, corrupt, wrong_length = self._collect(
                        expected, time.monotonic() + self.timeout_s, reply_size)
                    if len(got) < len(expected) or corrupt:
                        owed = {i for i in expected if i not in heard}
                        self._dirty = (owed, time.monotonic() + self.settle_max_s, self._guard_s(reply_size))
                finally:
                    fcntl.flock(self._fd, fcntl.LOCK_UN)
            except OSError as exc:
                raise FeetechBusError(f"bus {self.port} failed during {what}: {exc}") from exc
            if len(got) == len(expected):
                return got
            silent = [i for i in expected if i not in got and i not in wrong_length]
        if corrupt:
            raise ReplyChecksumError(f"{what}: corrupt replies (bad checksum) from {self.port} after {self.retries + 1} attempts")
        if not silent:
            sid, n = next(iter(wrong_length.items()))
            raise ReplyLengthError(f"{what}: servo id {sid} on {self.port} answered {n} parameter bytes, "
                                   f"expected {reply_size} (after {self.retries + 1} attempts)")
        self.stats.timeouts += 1
        raise ServoTimeoutError(silent, what, self.port, self.timeout_s)

    # ---- servo operations ----------------------------------------------
    def ping(self, servo_id: int) -> int:
        """Pings a servo and returns its model number."""
        self.transact(fp.ping(servo_id), [servo_id], "PING", reply_size=0)
        return self.read(servo_id, "Model_Number")

    def read(self, servo_id: int, name: str) -> int:
        reg = fp.register(name)
        pkt = self.transact(fp.read(servo_id, reg.address, reg.size), [servo_id], f"READ {name}", reg.size)[servo_id]
        return fp.decode_register(name, pkt.params)

    def write(self, servo_id: int, name: str, value: int) -> None:
        reg = fp.register(name)
        self.transact(fp.write(servo_id, reg.address, fp.encode_register(name, value)), [servo_id], f"WRITE {name}",
                      reply_size=0)

    def sync_read(self, servo_ids: Iterable[int], names: Iterable[str]) -> dict[int, dict[str, int]]:
        """One SYNC_READ of the contiguous block covering ``names``, decoded per servo."""
        ids, names = list(servo_ids), list(names)
        start, size = fp.span(names)
        replies = self.transact(fp.sync_read(ids, start, size), ids, f"SYNC_READ {','.join(names)}", size)
        return {i: {n: fp.slice_register(n, start, replies[i].params) for n in names} for i in ids}

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
