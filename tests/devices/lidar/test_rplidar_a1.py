"""The RPLIDAR A1 device against the pty fake that speaks the device's bytes."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pytest

from teledora.devices.lidar.rplidar_a1 import LidarHealthError, LidarTimeoutError, LidarWatchdogError, RplidarA1Backend
from teledora.operators.lidar.lidar_config import HardwareConfig
from teledora.models.config_files import load_lidar_setup
from teledora.fakes.rplidar_a1 import CHECK_FAULT_DISTANCE_MM, FakeRplidarA1, SyntheticRoom  # noqa: E402

# Generous timeout where a timeout is not the subject (the test machine may be busy);
# a short one where it is.
SETUP = load_lidar_setup()
# The watchdog gets a long timeout where it is not the subject: on a loaded machine the fake
# itself may fall behind its own rate for a while.
HW = replace(SETUP.hardware, read_timeout_s=2.0, stop_settle_s=0.1, reset_settle_s=0.1, max_buffered_bytes=3500,
             revolution_timeout_s=10.0)
HW_SHORT_TIMEOUT = replace(HW, read_timeout_s=0.6)
HW_WATCHDOG = replace(HW, revolution_timeout_s=1.0, max_buffered_bytes=20000)
FAKE_RATE = dict(scan_rate_hz=10.0, samples_per_second=3000.0)


def _scans(backend: RplidarA1Backend, count: int, budget_s: float = 5.0) -> list:
    """Reads until ``count`` scans arrived (the budget only guards against a hang)."""
    out: list = []
    end = time.monotonic() + budget_s
    while len(out) < count and time.monotonic() < end:
        out += backend.read()
    return out


@pytest.fixture
def make_backend():
    made = []

    def factory(fake: FakeRplidarA1, hw: HardwareConfig = HW) -> RplidarA1Backend:
        b = RplidarA1Backend(fake.port, "lidar_front", SETUP.grid, hw)
        made.append(b)
        return b

    yield factory
    for b in made:
        b.close()


def test_scans_match_the_synthetic_room(make_backend):
    room = SyntheticRoom()
    with FakeRplidarA1(room, **FAKE_RATE) as fake:
        backend = make_backend(fake)
        backend.connect()
        assert backend.info["model"] == 0x18 and backend.health == "good"
        scans = _scans(backend, 3)
    assert len(scans) == 3
    scan = scans[-1]
    assert scan.frame_id == "lidar_front" and len(scan) == 360 and scan.time_increment < 0
    a = scan.angles()
    ok = np.isfinite(scan.ranges)
    assert ok.sum() > 250  # 300 samples per turn fill most 1-degree sectors
    expected = np.array([room.distance(x) for x in a[ok]])
    # a sample may sit up to half a sector from the sector centre
    assert np.median(np.abs(scan.ranges[ok] - expected)) < 0.01
    assert scans[1].stamp_ns > scans[0].stamp_ns
    # the pillar at (1.5, 0.5): counter-clockwise (left of +x), as the conversion promises
    off = np.abs(np.angle(np.exp(1j * (a - math.atan2(0.5, 1.5)))))
    i = int(np.argmin(np.where(ok, off, np.inf)))  # nearest filled sector
    assert scan.ranges[i] == pytest.approx(math.hypot(1.5, 0.5) - 0.2, abs=0.03)


def test_lidar_still_streaming_from_an_unclean_exit_is_stopped_and_flushed(make_backend):
    with FakeRplidarA1(streaming_at_start=True, **FAKE_RATE) as fake:
        time.sleep(0.05)  # let the stale stream fill the buffer, as after a crash
        backend = make_backend(fake)
        backend.connect()
        assert fake.requests[0] == 0x25  # STOP before anything else
        assert len(_scans(backend, 1)) == 1


def test_the_bare_library_fails_on_a_streaming_lidar():
    """The failure the node works around (rplidar-roboticia 0.9.5)."""
    from rplidar import RPLidar, RPLidarException

    with FakeRplidarA1(streaming_at_start=True, **FAKE_RATE) as fake:
        time.sleep(0.05)
        lidar = RPLidar(fake.port, timeout=0.6)
        try:
            result = lidar.get_health()
        except RPLidarException as exc:
            result = str(exc)
        finally:
            lidar.disconnect()
    # "Incorrect descriptor starting bytes", or "Data in buffer ..." when bytes were
    # already waiting: never the (status, code) answer
    assert isinstance(result, str) and ("descriptor" in result or "buffer" in result)


def test_silent_lidar_raises_a_clear_error_instead_of_blocking(make_backend):
    with FakeRplidarA1(silent=True, **FAKE_RATE) as fake:
        backend = make_backend(fake, HW_SHORT_TIMEOUT)
        # the documented timeout, naming the request; not the library's "Descriptor length mismatch"
        with pytest.raises(LidarTimeoutError, match="did not answer GET_INFO: 0 of 7 descriptor bytes"):
            backend.connect()
        assert backend.timeouts == 1


def test_lidar_going_quiet_mid_scan_times_out_and_restarts(make_backend):
    with FakeRplidarA1(stall_after_samples=1000, **FAKE_RATE) as fake:
        backend = make_backend(fake, HW_SHORT_TIMEOUT)
        backend.connect()
        with pytest.raises(LidarTimeoutError, match="sent nothing"):
            _scans(backend, 100)
        fake.stall_after_samples = None
        backend.restart_scan("fault")
        assert len(_scans(backend, 2)) == 2
        # (a busy machine may add overflow restarts; the timeout happened once)
        assert backend.restarts >= 1 and backend.timeouts == 1 and fake.scan_starts >= 2


def test_stray_bytes_are_skipped_by_resync(make_backend):
    with FakeRplidarA1(garbage_every_samples=97, **FAKE_RATE) as fake:
        backend = make_backend(fake)
        backend.connect()
        scans = _scans(backend, 2)
    assert len(scans) >= 2 and backend.parser.resync_bytes >= 4  # a loaded machine may read more than one at once
    assert np.count_nonzero(np.isfinite(scans[-1].ranges)) > 250


def test_samples_with_a_clear_check_bit_never_reach_the_scans(make_backend):
    """Their angle continues the stream and their flags are right: only the check bit
    tells them apart, and the distance they carry is one the room never gives."""
    with FakeRplidarA1(check_bit_clear_every_samples=37, **FAKE_RATE) as fake:
        backend = make_backend(fake)
        backend.connect()
        scans = _scans(backend, 3)
    assert len(scans) >= 3 and fake.check_bit_cleared >= 20
    marker_m = CHECK_FAULT_DISTANCE_MM / 1000.0
    assert not any(np.any(np.abs(s.ranges - marker_m) < 0.5) for s in scans)
    # at most 36 good samples between two broken ones, each of which breaks the run
    assert backend.parser.resync_events >= backend.parser.samples // 37
    assert np.count_nonzero(np.isfinite(scans[-1].ranges)) > 240


def test_buffer_overflow_restarts_the_scan(make_backend):
    with FakeRplidarA1(**FAKE_RATE) as fake:
        backend = make_backend(fake, replace(HW, max_buffered_bytes=2000))
        backend.connect()
        fake.burst_revolutions = 10  # 3000 samples = 15 kB at once: far behind
        time.sleep(0.1)
        scans = _scans(backend, 2)
    assert backend.overflows >= 1 and backend.restarts >= 1
    assert len(scans) >= 2  # a loaded machine may read more than one revolution at once


def test_health_error_resets_then_gives_up_with_the_code(make_backend):
    with FakeRplidarA1(health_status=2, health_error_code=0x8001, **FAKE_RATE) as fake:
        backend = make_backend(fake)
        with pytest.raises(LidarHealthError, match="32769"):
            backend.connect()
        assert 0x40 in fake.requests  # RESET was tried


def _read_for(backend: RplidarA1Backend, seconds: float, period_s: float = 0.02, check=None) -> list:
    out: list = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(period_s)
        out += backend.read()
        if check is not None:
            check(backend)
    return out


def test_frozen_motor_trips_the_watchdog_and_memory_stays_bounded(make_backend):
    with FakeRplidarA1(**FAKE_RATE) as fake:
        hw = replace(HW_WATCHDOG, revolution_timeout_s=2.0)  # 6000 samples at one angle: 3x the turn limit
        backend = make_backend(fake, hw)
        backend.connect()
        assert len(_scans(backend, 2)) == 2
        fake.scan_rate_hz = 0.0  # the head stops; samples keep coming, all at one angle
        held = []
        with pytest.raises(LidarWatchdogError, match="motor not turning"):
            _read_for(backend, 10.0, check=lambda b: held.append(b.assembler.held_samples))
    assert max(held) <= hw.max_samples_per_revolution
    assert backend.assembler.dropped_long >= 1 and backend.watchdog_faults == 1


def test_slow_motor_trips_the_watchdog_with_the_measured_rate(make_backend):
    with FakeRplidarA1(scan_rate_hz=0.8, samples_per_second=2000.0) as fake:
        backend = make_backend(fake, replace(HW_WATCHDOG, revolution_timeout_s=3.0))
        backend.connect()
        with pytest.raises(LidarWatchdogError, match=r"motor too slow: .* \(\d\.\d\d Hz, below min_scan_rate_hz 2\.0") as err:
            _read_for(backend, 10.0)
    # the rate read from the stream (the fake may lag its own clock on a loaded machine: never faster)
    assert 0.1 < float(err.value.args[0].split(" Hz")[0].rsplit("(", 1)[1]) < 0.85
    assert backend.assembler.dropped_slow >= 1 and backend.assembler.revolutions == 0


def _phantom_rays(scan, room: SyntheticRoom) -> int:
    """Rays whose range no sample in their sector could have measured."""
    bad = 0
    for i in np.flatnonzero(np.isfinite(scan.ranges)):
        a = scan.angles()[i]
        half = scan.angle_increment / 2
        d = [room.distance(x) for x in np.linspace(a - half, a + half, 9)]
        if not min(d) - 0.03 <= scan.ranges[i] <= max(d) + 0.03:
            bad += 1
    return bad


def test_garbage_bursts_never_reach_the_scans(make_backend):
    room = SyntheticRoom()
    with FakeRplidarA1(room, seed=3, **FAKE_RATE) as fake:
        backend = make_backend(fake)
        backend.connect()

        def burst(b):
            fake.inject_garbage(40)  # 40 random bytes every read: ~25 bursts per turn

        scans = _read_for(backend, 3.0, check=burst)
    assert len(scans) >= 5 and fake.garbage_bytes > 2000
    assert sum(_phantom_rays(s, room) for s in scans) == 0
    assert backend.parser.resync_bytes >= fake.garbage_bytes // 2


def test_stamps_follow_the_device_pace_not_the_line_rate(make_backend):
    """An A1 streams ~100 us per byte, the line carries 86.8 us: with 100 ms reads,
    stamps counted back at the line rate come out ~8 ms late."""
    with FakeRplidarA1(scan_rate_hz=5.5, samples_per_second=2000.0) as fake:
        backend = make_backend(fake)
        backend.connect()
        scans = _read_for(backend, 3.5, period_s=0.1)
        truth = np.array(fake.turn_starts_ns)
    errors = []
    for scan in scans:
        n = len(scan)
        start = scan.stamp_ns - (n - 0.5) / n * scan.scan_time * 1e9
        k = int(np.argmin(np.abs(truth - start)))
        if k + 1 < len(truth):
            true_stamp = truth[k] + (n - 0.5) / n * (truth[k + 1] - truth[k])
            errors.append((scan.stamp_ns - true_stamp) * 1e-6)
    assert len(errors) >= 10
    # the first turns are stamped before the pace is measured (as are any after an
    # overflow restart on a busy machine): judge the typical turn
    assert abs(np.median(errors[3:])) < 3.0, errors
    assert backend.sample_clock.byte_ns == pytest.approx(100_000, rel=0.05)


def test_a_reader_that_keeps_falling_behind_is_a_fault_not_endless_restarts(make_backend):
    with FakeRplidarA1(**FAKE_RATE) as fake:
        # 100 ms between reads lets ~1500 bytes wait: always over a 600-byte limit
        backend = make_backend(fake, replace(HW_WATCHDOG, max_buffered_bytes=600))
        backend.connect()
        with pytest.raises(LidarWatchdogError, match="the reader fell behind"):
            _read_for(backend, 10.0, period_s=0.1)
    assert backend.overflows >= 3
