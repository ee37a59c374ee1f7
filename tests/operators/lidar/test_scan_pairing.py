import numpy as np
import pytest

from teledora.operators.lidar.laser_scan import LaserScan
from teledora.operators.lidar.scan_pairing import ScanPairer, UnknownSourceError

MS = 1_000_000


def _scan(stamp_ns):
    return LaserScan(stamp_ns, "l", 0.0, 0.0, 0.0, 0.0, 0.1, 0.15, 12.0, np.ones(1))


def test_pairs_just_inside_the_tolerance_and_not_just_outside():
    p = ScanPairer(tolerance_s=0.1)
    assert p.offer("front", _scan(1000 * MS), 1000 * MS) == []
    groups = p.offer("back", _scan(1000 * MS + 99_999_999), 1001 * MS)
    assert len(groups) == 1 and set(groups[0].scans) == {"front", "back"} and not groups[0].alone

    p = ScanPairer(tolerance_s=0.1)
    p.offer("front", _scan(1000 * MS), 1000 * MS)
    assert p.offer("back", _scan(1000 * MS + 100_000_001), 1001 * MS) == []
    assert p.stale_dropped == 1  # that front scan can never pair now


def test_exactly_at_the_tolerance_pairs():
    p = ScanPairer(tolerance_s=0.1)
    p.offer("back", _scan(0), 0)
    assert len(p.offer("front", _scan(100 * MS), 0)) == 1


def test_each_scan_is_used_once_and_the_nearest_newer_scan_pairs():
    p = ScanPairer(tolerance_s=0.1)
    p.offer("front", _scan(0), 0)
    assert len(p.offer("back", _scan(50 * MS), 50 * MS)) == 1
    # the next back scan has no partner left: it waits for the next front scan
    assert p.offer("back", _scan(150 * MS), 150 * MS) == []
    assert len(p.offer("front", _scan(182 * MS), 182 * MS)) == 1
    assert p.paired == 2


def test_a_silent_lidar_lets_the_other_through_alone_flagged():
    p = ScanPairer(tolerance_s=0.1, silence_timeout_s=0.5)
    p.offer("front", _scan(0), 0)
    p.offer("back", _scan(10 * MS), 10 * MS)  # a pair; back then stops
    out = []
    for k in range(1, 8):
        out += p.offer("front", _scan(k * 182 * MS), k * 182 * MS)
    alone = [g for g in out if g.alone]
    assert alone and all(g.silent == ["back"] and list(g.scans) == ["front"] for g in alone)
    # scans before the timeout (182, 364 ms) are not published alone
    assert min(g.scans["front"].stamp_ns for g in alone) > 500 * MS
    # the back lidar comes back: pairs again
    out = p.offer("back", _scan(8 * 182 * MS - 30 * MS), 8 * 182 * MS - 30 * MS)
    out += p.offer("front", _scan(8 * 182 * MS), 8 * 182 * MS)
    assert any(not g.alone for g in out)


def test_poll_releases_a_waiting_scan_when_the_partner_never_started():
    p = ScanPairer(silence_timeout_s=0.5)
    p.offer("front", _scan(0), 0)
    assert p.poll(400 * MS) == []
    groups = p.poll(600 * MS)
    assert len(groups) == 1 and groups[0].alone and groups[0].silent == ["back"]


def test_unknown_source():
    with pytest.raises(UnknownSourceError):
        ScanPairer().offer("left", _scan(0), 0)
