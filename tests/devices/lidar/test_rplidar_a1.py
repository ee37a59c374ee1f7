"""The RPLIDAR A1 device against the pty fake that speaks the device's bytes."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import pytest

from teledora.devices.lidar.rplidar_a1 import LidarHealthError, LidarTimeoutError, RplidarA1Backend
from teledora.operators.lidar.lidar_config import HardwareConfig
from teledora.operators.lidar.rplidar_protocol import RplidarProtocolError
from teledora.models.config_files import load_lidar_setup
from teledora.fakes.rplidar_a1 import FakeRplidarA1, SyntheticRoom  # noqa: E402

# Generous timeout where a timeout is not the subject (the test machine may be busy);
# a short one where it is.
SETUP = load_lidar_setup()
HW = replace(SETUP.hardware, read_timeout_s=2.0, stop_settle_s=0.1, reset_settle_s=0.1, max_buffered_bytes=3500)
HW_SHORT_TIMEOUT = replace(HW, read_timeout_s=0.6)
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
        with pytest.raises(RplidarProtocolError, match="get_info"):
            backend.connect()


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
