"""RPLIDAR A1 serial protocol: requests, response descriptors and scan samples.

Pure byte handling, no serial port: the caller reads bytes (with its own
timeout) and feeds them in. Facts used (Slamtec protocol, A1 firmware 1.x):

* A request is ``A5 <cmd>``; requests with a payload add ``<len> <payload>
  <xor checksum>``.
* Every response starts with a 7-byte descriptor ``A5 5A <len 30 bits | mode
  2 bits, little endian> <type>``; mode 0 = single response, 1 = multiple.
* SCAN answers ``A5 5A 05 00 00 40 81`` and then streams 5-byte samples:
  byte 0 = quality << 2 | !S << 1 | S (S = first sample of a new revolution),
  byte 1 = angle_q6[6:0] << 1 | C (C, the check bit, is always 1),
  byte 2 = angle_q6[14:7], bytes 3-4 = distance_q2 (mm * 4), little endian.
  Angles are clockwise degrees * 64; distance 0 means "no valid measurement".

:class:`SampleStreamParser` checks more than those bits: the protocol has no
checksum, so a random 5-byte window passes the S/!S and C checks (and angle <
360 degrees) about one time in six. A window is taken as a sample only when its
angle also continues the previous sample's (the head turns one way at a nearly
steady rate) and, if it carries the start flag, when it lies just past 0
degrees. Any window that fails makes the parser lose sync and look for a new
run of ``confirm_windows`` windows that pass every check with each other.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teledora.operators.errors import ProtocolError

SYNC_BYTE = 0xA5
SYNC_BYTE2 = 0x5A

CMD_STOP = 0x25
CMD_RESET = 0x40
CMD_SCAN = 0x20
CMD_FORCE_SCAN = 0x21
CMD_GET_INFO = 0x50
CMD_GET_HEALTH = 0x52

DESCRIPTOR_LEN = 7
INFO_LEN = 20
HEALTH_LEN = 3
SAMPLE_LEN = 5

MODE_SINGLE = 0
MODE_MULTIPLE = 1

TYPE_INFO = 0x04
TYPE_HEALTH = 0x06
TYPE_SCAN = 0x81

HEALTH_STATUS_NAMES = {0: "good", 1: "warning", 2: "error"}


class RplidarProtocolError(ProtocolError):
    """Bytes from the device do not follow the RPLIDAR protocol."""


def encode_request(command: int, payload: bytes = b"") -> bytes:
    """Bytes of one request to the device.

    Args:
        command: Command byte (``CMD_*``).
        payload: Optional payload; when present, length and XOR checksum are added.
    """
    if not 0 <= command <= 0xFF:
        raise RplidarProtocolError(f"command must be one byte, got {command}")
    if not payload:
        return bytes([SYNC_BYTE, command])
    if len(payload) > 0xFF:
        raise RplidarProtocolError(f"payload longer than 255 bytes ({len(payload)})")
    body = bytes([SYNC_BYTE, command, len(payload)]) + payload
    checksum = 0
    for b in body:
        checksum ^= b
    return body + bytes([checksum])


@dataclass(frozen=True)
class ResponseDescriptor:
    """The 7-byte header in front of every response.

    Attributes:
        length: Payload length in bytes (per response for multiple mode).
        mode: ``MODE_SINGLE`` or ``MODE_MULTIPLE``.
        data_type: Response type byte (``TYPE_*``).
    """

    length: int
    mode: int
    data_type: int


def parse_descriptor(data: bytes) -> ResponseDescriptor:
    """Parses a response descriptor.

    Raises:
        RplidarProtocolError: wrong length or missing ``A5 5A`` start bytes
            (typically a device still streaming scan samples).
    """
    if len(data) != DESCRIPTOR_LEN:
        raise RplidarProtocolError(f"descriptor must be {DESCRIPTOR_LEN} bytes, got {len(data)}")
    if data[0] != SYNC_BYTE or data[1] != SYNC_BYTE2:
        raise RplidarProtocolError(
            f"descriptor does not start with A5 5A (got {data[:2].hex(' ')}): "
            "the device is probably still streaming a previous scan"
        )
    word = int.from_bytes(data[2:6], "little")
    return ResponseDescriptor(length=word & 0x3FFFFFFF, mode=word >> 30, data_type=data[6])


def expect_descriptor(data: bytes, length: int, mode: int, data_type: int) -> ResponseDescriptor:
    """Parses a descriptor and checks it answers the request that was sent."""
    desc = parse_descriptor(data)
    if (desc.length, desc.mode, desc.data_type) != (length, mode, data_type):
        raise RplidarProtocolError(
            f"unexpected descriptor length={desc.length} mode={desc.mode} type=0x{desc.data_type:02x}; "
            f"expected length={length} mode={mode} type=0x{data_type:02x}"
        )
    return desc


@dataclass(frozen=True)
class DeviceInfo:
    """GET_INFO answer."""

    model: int
    firmware_major: int
    firmware_minor: int
    hardware: int
    serial_number: str


def parse_info(data: bytes) -> DeviceInfo:
    """Parses the 20-byte GET_INFO payload."""
    if len(data) != INFO_LEN:
        raise RplidarProtocolError(f"info payload must be {INFO_LEN} bytes, got {len(data)}")
    return DeviceInfo(
        model=data[0],
        firmware_minor=data[1],
        firmware_major=data[2],
        hardware=data[3],
        serial_number=data[4:20].hex().upper(),
    )


@dataclass(frozen=True)
class DeviceHealth:
    """GET_HEALTH answer: status 0 good, 1 warning, 2 error (protection stop)."""

    status: int
    error_code: int

    @property
    def status_name(self) -> str:
        return HEALTH_STATUS_NAMES.get(self.status, f"unknown({self.status})")


def parse_health(data: bytes) -> DeviceHealth:
    """Parses the 3-byte GET_HEALTH payload."""
    if len(data) != HEALTH_LEN:
        raise RplidarProtocolError(f"health payload must be {HEALTH_LEN} bytes, got {len(data)}")
    if data[0] not in HEALTH_STATUS_NAMES:
        raise RplidarProtocolError(f"unknown health status {data[0]}")
    return DeviceHealth(status=data[0], error_code=int.from_bytes(data[1:3], "little"))


ANGLE_Q6_LIMIT = 360 * 64


def sample_is_valid(b0: int, b1: int, b2: int) -> bool:
    """True when a 5-byte window's first three bytes pass the S/!S and C checks
    and its angle is below 360 degrees."""
    start = b0 & 0x1
    inverse = (b0 >> 1) & 0x1
    angle_q6 = (b1 >> 1) | (b2 << 7)
    return start != inverse and (b1 & 0x1) == 1 and angle_q6 < ANGLE_Q6_LIMIT


def sample_angle_q6(b1: int, b2: int) -> int:
    """Angle of a sample window in 1/64 degree."""
    return (b1 >> 1) | (b2 << 7)


@dataclass(frozen=True)
class ContinuityLimits:
    """How far one sample's angle may move from the previous sample's.

    Attributes:
        max_step_deg: Largest clockwise step between consecutive samples
            (the A1 steps ~1 degree at 5.5 Hz, ~1.8 degrees at 10 Hz).
        max_backstep_deg: Largest step backwards tolerated (measurement jitter).
    """

    max_step_deg: float
    max_backstep_deg: float

    def __post_init__(self) -> None:
        if not 0.0 < self.max_step_deg < 180.0:
            raise ValueError(f"max_step_deg must be in (0, 180), got {self.max_step_deg}")
        if not 0.0 <= self.max_backstep_deg < 180.0:
            raise ValueError(f"max_backstep_deg must be in [0, 180), got {self.max_backstep_deg}")


# Used where no limits are given (protocol-level tests, tools): generous for any A1 rate.
DEFAULT_LIMITS = ContinuityLimits(max_step_deg=3.0, max_backstep_deg=1.0)


@dataclass
class SampleBatch:
    """Samples decoded from one chunk of bytes, as parallel arrays.

    Attributes:
        start: True for the first sample of a new revolution.
        quality: Signal quality 0-63.
        angle_deg: Clockwise angle in degrees, [0, 360) (device frame).
        distance_m: Distances in metres; 0 means no valid measurement.
        end_offset: For each sample, the byte offset (in the fed chunk) just
            after its last byte, so the caller can estimate its arrival time.
    """

    start: np.ndarray
    quality: np.ndarray
    angle_deg: np.ndarray
    distance_m: np.ndarray
    end_offset: np.ndarray

    def __len__(self) -> int:
        return int(self.start.shape[0])


class SampleStreamParser:
    """Turns a byte stream of SCAN samples into :class:`SampleBatch` es.

    In sync, each 5-byte window must pass the S/!S and C checks, continue the
    previous sample's angle within ``limits`` and, when it carries the start
    flag, lie within one step of 0 degrees; and the window after it must
    continue it in turn (so a sample is handed out one sample late). A window
    that fails is not a sample: the parser loses sync at that window and takes a new anchor only
    where ``confirm_windows`` consecutive windows pass every check among
    themselves, dropping one byte at a time until they do. The anchor (the
    run's first window) sets the angle the next must continue but is not
    handed out itself (its start flag passes to the next sample), since
    nothing before it vouches for it. So a sample that breaks the run is
    dropped, and after a bad anchor the good samples start the new run.

    Counters: ``resync_bytes`` (bytes dropped), ``resync_events`` (losses of
    sync), ``rejected_windows`` (windows that passed the bit checks but not
    the angle checks: phantom samples), ``samples`` (accepted), ``bytes_fed``
    (stream position: bytes fed since the last reset, for the sample clock).
    Memory is bounded: fewer than ``5 * max(confirm_windows, 2)`` bytes wait between calls.

    Args:
        confirm_windows: Consecutive valid windows needed to regain sync.
        limits: Angle continuity limits.
    """

    def __init__(self, confirm_windows: int = 3, limits: ContinuityLimits = DEFAULT_LIMITS) -> None:
        if confirm_windows < 1:
            raise ValueError("confirm_windows must be >= 1")
        self.confirm_windows = confirm_windows
        self.limits = limits
        self._max_step_q6 = int(round(limits.max_step_deg * 64))
        self._max_back_q6 = int(round(limits.max_backstep_deg * 64))
        self._pending = b""
        self.resync_bytes = 0
        self.resync_events = 0
        self.rejected_windows = 0
        self.samples = 0
        self.bytes_fed = 0
        self._in_sync = False  # the first bytes after a flush may start mid-sample
        self._ref_q6: int | None = None  # angle of the last accepted sample (or of the anchor)
        self._carry_start = False  # a dropped anchor carried the start flag

    def reset(self) -> None:
        """Forgets buffered bytes (after a stop / flush / restart)."""
        self._pending = b""
        self._in_sync = False
        self._ref_q6 = None
        self._carry_start = False
        self.bytes_fed = 0

    def _continues(self, prev_q6: int, b0: int, b1: int, b2: int) -> bool:
        """Whether a bit-valid window continues a sample at ``prev_q6``."""
        angle = sample_angle_q6(b1, b2)
        step = (angle - prev_q6) % ANGLE_Q6_LIMIT
        if not (step <= self._max_step_q6 or ANGLE_Q6_LIMIT - step <= self._max_back_q6):
            return False
        return self._start_plausible(b0, angle)

    def _start_plausible(self, b0: int, angle_q6: int) -> bool:
        """A start flag only on a sample just past 0 degrees (or jitter just before it)."""
        if not b0 & 0x1:
            return True
        return angle_q6 <= self._max_step_q6 or ANGLE_Q6_LIMIT - angle_q6 <= self._max_back_q6

    def _run_passes(self, data: bytes, i: int) -> bool:
        """``confirm_windows`` windows from ``i`` pass the bit checks and continue each other."""
        prev: int | None = None
        for j in range(i, i + SAMPLE_LEN * self.confirm_windows, SAMPLE_LEN):
            b0, b1, b2 = data[j], data[j + 1], data[j + 2]
            if not sample_is_valid(b0, b1, b2):
                return False
            if prev is None:
                if not self._start_plausible(b0, sample_angle_q6(b1, b2)):
                    return False
            elif not self._continues(prev, b0, b1, b2):
                return False
            prev = sample_angle_q6(b1, b2)
        return True

    def feed(self, chunk: bytes) -> SampleBatch:
        """Decodes every complete sample in ``pending + chunk``."""
        data = self._pending + chunk
        base = len(self._pending)  # offsets reported relative to ``chunk``
        self.bytes_fed += len(chunk)
        starts: list[int] = []
        carried: list[int] = []  # samples that take over a dropped anchor's start flag
        i = 0
        n = len(data)
        while i + SAMPLE_LEN <= n:
            if not self._in_sync:
                # Out of sync a random window passes the bit checks about one time
                # in six: require a run of windows that also continue each other.
                if i + SAMPLE_LEN * self.confirm_windows > n:
                    break
                if self._run_passes(data, i):
                    # The run's first window is vouched for from one side only: the last
                    # garbage window before real samples passes that about once in 800
                    # bursts. It anchors the angle but is not handed out, so every sample
                    # handed out continues a window before it and is continued by the next.
                    self._in_sync = True
                    self._ref_q6 = sample_angle_q6(data[i + 1], data[i + 2])
                    self._carry_start = self._carry_start or bool(data[i] & 0x1)
                    self.resync_bytes += SAMPLE_LEN
                    i += SAMPLE_LEN
                    continue
                self.resync_bytes += 1
                i += 1
                continue
            b0, b1, b2 = data[i], data[i + 1], data[i + 2]
            if not sample_is_valid(b0, b1, b2):
                self.resync_events += 1
                self._in_sync = False
                self.resync_bytes += 1
                i += 1
                continue
            if self._ref_q6 is not None and not self._continues(self._ref_q6, b0, b1, b2):
                # Either this window is a phantom or the last sample was: look for a
                # fresh run starting here (kept if good, else dropped byte by byte).
                self.rejected_windows += 1
                self.resync_events += 1
                self._in_sync = False
                continue
            # One window passing by chance is likely enough (about 1 in 500 random
            # windows continue the angle): the next one must continue this one too.
            j = i + SAMPLE_LEN
            if j + SAMPLE_LEN > n:
                break  # decided when the next window has arrived
            if not sample_is_valid(data[j], data[j + 1], data[j + 2]):
                self.resync_events += 1
                self._in_sync = False
                continue
            if not self._continues(sample_angle_q6(b1, b2), data[j], data[j + 1], data[j + 2]):
                self.rejected_windows += 1  # this window or the next is a phantom
                self.resync_events += 1
                self._in_sync = False
                continue
            starts.append(i)
            if self._carry_start:  # the anchor dropped above began a turn: this sample does now
                carried.append(len(starts) - 1)
                self._carry_start = False
            self._ref_q6 = sample_angle_q6(b1, b2)
            i += SAMPLE_LEN
        self._pending = data[i:]
        if not starts:
            empty = np.zeros(0)
            return SampleBatch(empty.astype(bool), empty.astype(np.uint8), empty, empty, empty.astype(np.int64))
        idx = np.asarray(starts, dtype=np.int64)
        raw = np.frombuffer(data, dtype=np.uint8)
        b0 = raw[idx].astype(np.int64)
        b1 = raw[idx + 1].astype(np.int64)
        b2 = raw[idx + 2].astype(np.int64)
        b3 = raw[idx + 3].astype(np.int64)
        b4 = raw[idx + 4].astype(np.int64)
        angle_q6 = (b1 >> 1) | (b2 << 7)
        distance_q2 = b3 | (b4 << 8)
        self.samples += len(starts)
        start = (b0 & 0x1).astype(bool)
        start[carried] = True
        return SampleBatch(
            start=start,
            quality=(b0 >> 2).astype(np.uint8),
            angle_deg=angle_q6 / 64.0,
            distance_m=distance_q2 / 4000.0,
            end_offset=idx + SAMPLE_LEN - base,
        )
