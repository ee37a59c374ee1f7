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
    assert p.unpaired_dropped == 1 and p.stale_dropped == 0  # that front scan can never pair now
    assert p.waiting("front") == 0 and p.waiting("back") == 1


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
    out, released_ns = [], {}
    for k in range(1, 8):
        out += p.offer("front", _scan(k * 182 * MS), k * 182 * MS)
        for g in p.poll(k * 182 * MS):
            out.append(g)
            released_ns[g.scans["front"].stamp_ns] = k * 182 * MS
    alone = [g for g in out if g.alone]
    assert alone and all(g.silent == ["back"] and list(g.scans) == ["front"] for g in alone)
    # every front scan goes out, in order, but none alone before the back lidar
    # has been silent for the timeout (the 182 and 364 ms scans wait until then)
    assert sorted(released_ns) == list(released_ns) == [k * 182 * MS for k in range(1, 8)]
    assert min(released_ns.values()) > 510 * MS
    # the back lidar comes back: pairs again
    out = p.offer("back", _scan(8 * 182 * MS - 30 * MS), 8 * 182 * MS - 30 * MS)
    out += p.offer("front", _scan(8 * 182 * MS), 8 * 182 * MS)
    assert any(not g.alone for g in out)


def _arrivals(front_delay_ms: float, back_delay_ms: float, seconds: float = 20.0) -> list[tuple[float, str, int]]:
    """(host ms, lidar, stamp ns) of a 5.5 Hz front and a 10 Hz back lidar whose
    scans reach the merger the given time after their stamps."""
    out = []
    for name, hz, delay in (("front", 5.5, front_delay_ms), ("back", 10.0, back_delay_ms)):
        for k in range(int(seconds * hz)):
            stamp_ms = 3.0 + k * 1000.0 / hz
            out.append((stamp_ms + delay, name, round(stamp_ms * MS)))
    return sorted(out)


def _pair_all(arrivals, batch_ms: float = 0.0) -> tuple[ScanPairer, list]:
    """Feeds the arrivals as a node would: in batches of ``batch_ms`` of host
    time (0: one by one), each batch offered, then polled."""
    p, groups, k = ScanPairer(("front", "back"), 0.1, 0.5), [], 0
    while k < len(arrivals):
        end = arrivals[k][0] + batch_ms
        batch = []
        while k < len(arrivals) and arrivals[k][0] <= end:
            batch.append(arrivals[k])
            k += 1
        now_ns = round(end * MS)
        for _, name, stamp in batch:
            groups += p.offer(name, _scan(stamp), now_ns)
        groups += p.poll(now_ns)
    return p, groups


def _pairs(groups) -> list[tuple[int, int]]:
    return [(g.scans["front"].stamp_ns, g.scans["back"].stamp_ns) for g in groups if not g.alone]


def test_one_lidar_arriving_late_or_the_merger_batching_loses_no_pair():
    """Pairs are chosen by stamp: a lidar whose scans arrive up to 300 ms late
    (under the silence timeout), or a merger that takes its inputs in batches
    of up to 600 ms (past it), still pairs every front scan with a back scan
    within the tolerance, and releases none alone. (The pairer before this
    one, deciding in arrival order: 60 of 110 pairs with the front lidar
    150 ms late, 1 with it 300 ms late, 20 scans alone with 600 ms batches.)"""
    reference, ref_groups = _pair_all(_arrivals(0, 0))
    assert reference.paired == 110 and reference.alone == 0 and reference.stale_dropped == 0
    for front_ms, back_ms, batch_ms in ((150, 0, 0), (0, 150, 0), (300, 20, 0), (0, 0, 400), (0, 0, 600),
                                        (250, 0, 200)):
        p, groups = _pair_all(_arrivals(front_ms, back_ms), batch_ms)
        case = (front_ms, back_ms, batch_ms)
        assert (p.paired, p.alone, p.stale_dropped, p.unpaired_dropped) == (110, 0, 0, 89), case
        assert all(abs(f - b) <= 100 * MS for f, b in _pairs(groups)), case
        assert sorted(f for f, _ in _pairs(groups)) == sorted(f for f, _ in _pairs(ref_groups)), case
        if front_ms == back_ms == 0:
            assert _pairs(groups) == _pairs(ref_groups), case  # batching alone changes nothing


def test_a_scan_older_than_its_own_lidars_last_is_stale():
    p = ScanPairer()
    p.offer("front", _scan(200 * MS), 0)
    assert p.offer("front", _scan(100 * MS), 0) == []
    assert p.stale_dropped == 1 and p.waiting("front") == 1


def test_poll_releases_a_waiting_scan_when_the_partner_never_started():
    p = ScanPairer(silence_timeout_s=0.5)
    p.offer("front", _scan(0), 0)
    assert p.poll(400 * MS) == []
    groups = p.poll(600 * MS)
    assert len(groups) == 1 and groups[0].alone and groups[0].silent == ["back"]


def test_scans_waiting_when_the_inputs_end_are_counted():
    p = ScanPairer(tolerance_s=0.1, silence_timeout_s=0.5)
    p.offer("front", _scan(0), 0)
    p.offer("back", _scan(40 * MS), 40 * MS)  # pairs with front 0
    for t in (200, 400, 300):  # the back lidar's last scans; 300 comes after 400: stale
        p.offer("front", _scan(t * MS), t * MS)
    assert p.end() == 2
    assert p.waiting("front") == 0 and p.waiting_at_end == 2 and p.stale_dropped == 1 and p.paired == 1
    assert p.end() == 0 and p.waiting_at_end == 2  # nothing is counted twice


def test_unknown_source():
    with pytest.raises(UnknownSourceError):
        ScanPairer().offer("left", _scan(0), 0)
