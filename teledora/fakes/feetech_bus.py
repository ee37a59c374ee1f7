"""A fake Feetech STS servo bus on a pseudo-terminal, speaking the servos' bytes.

Each emulated servo has a 256-byte register table (EPROM + SRAM layout of the
STS series: torque enable 40, goal position 42, goal velocity 46, operating
mode 33, present position 56 / velocity 58 / load 60 / current 69 ...) and a
motor model (:class:`SimulatedServo`) advanced in (optionally scaled) real time
before every answer, so drivers see positions move, wrap at 4096, stall at hard
stops and draw current.

Instructions answered: PING, READ, WRITE (with a status reply), SYNC_READ (one
status packet per listed servo, in order) and SYNC_WRITE (no reply). Requests
with a bad checksum are ignored, as real servos do.

Failure switches: ``mute(id)`` (the servo stops answering), ``corrupt_replies``
(flip the checksum of the next N replies), ``wrong_length_replies`` (the next N
replies carry one parameter byte too many, with a valid checksum),
``FakeServo.reply_delay_s`` / ``delay_next_reply(id, s)`` (the servo answers late,
always or once: a slow servo or a loaded bus), ``FakeServo.model.load_current_ma``
(an external load raising the current), ``error_bits`` (status error byte).
A late servo holds up the servos after it in a SYNC_READ and the requests after
it, as on a half-duplex wire.

The framing is written here from the protocol description, separately from
``teledora.operators.drive.feetech_protocol``, so the two check each other.
"""

from __future__ import annotations

import os
import select
import threading
import time
import tty
from dataclasses import dataclass, field
from typing import Callable

from teledora.operators.drive.sts_servo_model import POSITION_MODE, VELOCITY_MODE, ServoModelConfig, SimulatedServo

ADDR_MODEL = 3
ADDR_ID = 5
ADDR_HOMING_OFFSET = 31
ADDR_MODE = 33
ADDR_TORQUE = 40
ADDR_GOAL_POSITION = 42
ADDR_GOAL_VELOCITY = 46
ADDR_PRESENT_POSITION = 56
ADDR_PRESENT_VELOCITY = 58
ADDR_PRESENT_LOAD = 60
ADDR_VOLTAGE = 62
ADDR_TEMPERATURE = 63
ADDR_MOVING = 66
ADDR_PRESENT_CURRENT = 69


def _csum(body: bytes) -> int:
    total = 0
    for b in body:
        total += b
    return 0xFF - (total & 0xFF)


def _frame(servo_id: int, code: int, params: bytes) -> bytes:
    body = bytes([servo_id, len(params) + 2, code]) + params
    return b"\xff\xff" + body + bytes([_csum(body)])


def _u16(value: int) -> bytes:
    return bytes([value & 0xFF, (value >> 8) & 0xFF])


def _sm16(value: int, sign_bit: int = 15) -> bytes:
    mag = min(abs(int(value)), (1 << sign_bit) - 1)
    return _u16(mag | ((1 << sign_bit) if value < 0 else 0))


def _from_sm16(lo: int, hi: int, sign_bit: int = 15) -> int:
    raw = lo | (hi << 8)
    mag = raw & ((1 << sign_bit) - 1)
    return -mag if raw & (1 << sign_bit) else mag


@dataclass
class FakeServo:
    """One emulated servo: registers + motor."""

    servo_id: int
    model_number: int = 777
    model: SimulatedServo = field(default_factory=SimulatedServo)
    error_bits: int = 0
    muted: bool = False
    reply_delay_s: float = 0.0
    next_delays: list[float] = field(default_factory=list)  # one-shot delays, used before reply_delay_s
    registers: bytearray = field(default_factory=lambda: bytearray(256))

    def __post_init__(self) -> None:
        r = self.registers
        r[ADDR_MODEL : ADDR_MODEL + 2] = _u16(self.model_number)
        r[ADDR_ID] = self.servo_id
        r[ADDR_VOLTAGE] = 120
        r[ADDR_TEMPERATURE] = 30
        r[ADDR_MODE] = self.model.mode
        r[ADDR_GOAL_POSITION : ADDR_GOAL_POSITION + 2] = _u16(self.model.goal_position)
        self.publish()

    def publish(self) -> None:
        """Motor state -> present registers."""
        m, r = self.model, self.registers
        offset = _from_sm16(r[ADDR_HOMING_OFFSET], r[ADDR_HOMING_OFFSET + 1], 11)
        r[ADDR_PRESENT_POSITION : ADDR_PRESENT_POSITION + 2] = _u16((m.raw_position - offset) % 4096)
        r[ADDR_PRESENT_VELOCITY : ADDR_PRESENT_VELOCITY + 2] = _sm16(m.raw_velocity)
        r[ADDR_PRESENT_CURRENT : ADDR_PRESENT_CURRENT + 2] = _u16(min(m.raw_current, 0xFFFF))
        r[ADDR_MOVING] = 1 if abs(m.velocity_ticks_s) > 1 else 0

    def absorb(self, address: int, data: bytes) -> None:
        """A write landed on the registers: copy it and update the motor."""
        self.registers[address : address + len(data)] = data
        r, m = self.registers, self.model
        touched = set(range(address, address + len(data)))
        if ADDR_TORQUE in touched:
            m.torque_enabled = bool(r[ADDR_TORQUE])
        if ADDR_MODE in touched:
            m.mode = VELOCITY_MODE if r[ADDR_MODE] == 1 else POSITION_MODE
        if touched & {ADDR_GOAL_POSITION, ADDR_GOAL_POSITION + 1}:
            offset = _from_sm16(r[ADDR_HOMING_OFFSET], r[ADDR_HOMING_OFFSET + 1], 11)
            m.goal_position = (_from_sm16(r[ADDR_GOAL_POSITION], r[ADDR_GOAL_POSITION + 1]) + offset) % 4096
            m.torque_enabled = True  # a goal write switches torque on
            r[ADDR_TORQUE] = 1
        if touched & {ADDR_GOAL_VELOCITY, ADDR_GOAL_VELOCITY + 1}:
            m.goal_velocity = _from_sm16(r[ADDR_GOAL_VELOCITY], r[ADDR_GOAL_VELOCITY + 1])


class FakeFeetechBus:
    """Servos behind a pty. Use as a context manager; ``port`` is the device path.

    Args:
        servos: The servos on the bus.
        time_scale: Simulated seconds per real second (speeds up slow motions in tests).
        baud_rate: When ``emulate_wire_time``, replies are delayed by the time the
            request and reply bytes take on a wire at this rate.
        emulate_wire_time: Delay replies by wire time (benchmarks).
        clock: Time source in ns for the motors (default: the monotonic clock);
            tests pass the node's fake clock so motion follows scripted time.
    """

    def __init__(self, servos: list[FakeServo], time_scale: float = 1.0, baud_rate: int = 1_000_000,
                 emulate_wire_time: bool = False, clock: Callable[[], int] | None = None) -> None:
        self._clock = clock or time.monotonic_ns
        self.servos = {s.servo_id: s for s in servos}
        self.time_scale = time_scale
        self.byte_time_s = 10.0 / baud_rate
        self.emulate_wire_time = emulate_wire_time
        self.corrupt_replies = 0
        self.wrong_length_replies = 0
        self.bad_requests = 0
        self.requests: list[tuple[int, int, bytes]] = []  # (id, instruction, params)
        self.lock = threading.RLock()
        self._master, self._slave = os.openpty()
        tty.setraw(self._master)
        tty.setraw(self._slave)
        self.port = os.ttyname(self._slave)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-feetech-bus", daemon=True)
        self._last = self._clock()

    def __enter__(self) -> "FakeFeetechBus":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2.0)
        for fd in (self._master, self._slave):
            try:
                os.close(fd)
            except OSError:
                pass

    def mute(self, servo_id: int, muted: bool = True) -> None:
        self.servos[servo_id].muted = muted

    def delay_next_reply(self, servo_id: int, delay_s: float) -> None:
        """The servo's next reply leaves ``delay_s`` late (once)."""
        with self.lock:
            self.servos[servo_id].next_delays.append(delay_s)

    def advance(self) -> None:
        """Steps every motor to now (called before each answer)."""
        with self.lock:
            now = self._clock()
            dt = (now - self._last) * 1e-9 * self.time_scale
            self._last = now
            while dt > 0:
                h = min(dt, 0.002)
                for s in self.servos.values():
                    s.model.step(h)
                dt -= h
            for s in self.servos.values():
                s.publish()

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float = 2.0) -> bool:
        """Waits until ``predicate()`` holds (unanswered writes are processed asynchronously)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self.lock:
                if predicate():
                    return True
            time.sleep(0.001)
        return False

    def writes_to(self, servo_id: int, address: int) -> list[bytes]:
        """Data written (WRITE or SYNC_WRITE) to ``address`` of ``servo_id``, oldest first."""
        out = []
        for sid, instr, params in self.requests:
            if instr == 0x03 and sid == servo_id and params[0] == address:
                out.append(params[1:])
            elif instr == 0x83 and params[0] == address:
                size = params[1]
                for i in range(2, len(params), size + 1):
                    if params[i] == servo_id:
                        out.append(params[i + 1 : i + 1 + size])
        return out

    # ---- serving -------------------------------------------------------
    def _serve(self) -> None:
        buf = bytearray()
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self._master], [], [], 0.05)
            except (OSError, ValueError):
                return
            if not ready:
                continue
            try:
                chunk = os.read(self._master, 4096)
            except OSError:
                return
            buf.extend(chunk)
            while True:
                start = buf.find(b"\xff\xff")
                if start < 0:
                    del buf[: max(0, len(buf) - 1)]
                    break
                del buf[:start]
                if len(buf) < 4:
                    break
                end = 4 + buf[3]
                if len(buf) < end:
                    break
                frame = bytes(buf[:end])
                del buf[:end]
                if _csum(frame[2:-1]) != frame[-1]:
                    self.bad_requests += 1
                    continue
                self._handle(frame[2], frame[4], frame[5:-1], len(frame))

    def _reply(self, servo: FakeServo, params: bytes) -> tuple[float, bytes]:
        """(delay before it, frame) of one status reply."""
        if self.wrong_length_replies > 0:
            self.wrong_length_replies -= 1
            params += b"\x00"
        frame = bytearray(_frame(servo.servo_id, servo.error_bits, params))
        if self.corrupt_replies > 0:
            self.corrupt_replies -= 1
            frame[-1] ^= 0xA5
        delay = servo.next_delays.pop(0) if servo.next_delays else servo.reply_delay_s
        return delay, bytes(frame)

    def _handle(self, servo_id: int, instr: int, params: bytes, request_len: int) -> None:
        self.advance()
        out: list[tuple[float, bytes]] = []
        with self.lock:
            self.requests.append((servo_id, instr, params))
            target = self.servos.get(servo_id)
            if instr == 0x01 and target and not target.muted:
                out.append(self._reply(target, b""))
            elif instr == 0x02 and target and not target.muted and len(params) == 2:
                addr, n = params
                out.append(self._reply(target, bytes(target.registers[addr : addr + n])))
            elif instr == 0x03 and target and len(params) >= 2:
                if not target.muted:
                    target.absorb(params[0], params[1:])
                    out.append(self._reply(target, b""))
            elif instr == 0x82 and servo_id == 0xFE and len(params) >= 3:
                addr, n = params[0], params[1]
                for sid in params[2:]:
                    s = self.servos.get(sid)
                    if s and not s.muted:
                        out.append(self._reply(s, bytes(s.registers[addr : addr + n])))
            elif instr == 0x83 and servo_id == 0xFE and len(params) >= 3:
                addr, n = params[0], params[1]
                for i in range(2, len(params) - n, n + 1):
                    s = self.servos.get(params[i])
                    if s and not s.muted:
                        s.absorb(addr, params[i + 1 : i + 1 + n])
        if not out:
            return
        if self.emulate_wire_time:
            time.sleep((request_len + sum(len(f) for _, f in out)) * self.byte_time_s)
        pending = bytearray()
        for delay, frame in out:
            if delay > 0:  # what the servos before it said is on the wire already
                if pending:
                    self._send(bytes(pending))
                    pending.clear()
                if self._stop.wait(delay):
                    return
            pending += frame
        self._send(bytes(pending))

    def _send(self, data: bytes) -> None:
        try:
            os.write(self._master, data)
        except OSError:
            if not self._stop.is_set():
                raise


def arm_servos(ids=range(1, 8), model_number: int = 777) -> list[FakeServo]:
    """Servos 1..7 in position mode, centred at 2048."""
    return [FakeServo(i, model_number, SimulatedServo(ServoModelConfig(), position_ticks=2048.0)) for i in ids]
