"""Gap detection on recorded topics."""

from __future__ import annotations

import pytest

from teledora.operators.recording.recording_gaps import GapConfigError, GapDetector, find_gaps

MS = 1_000_000


def test_steady_topic_has_no_gaps():
    times = [i * 33 * MS + (i % 3) * MS for i in range(100)]
    assert find_gaps("cam", times) == []


def test_stall_is_found_with_estimated_missing_count():
    times = [i * 33 * MS for i in range(20)] + [19 * 33 * MS + 330 * MS]
    gaps = find_gaps("cam", times)
    assert len(gaps) == 1
    gap = gaps[0]
    assert gap.kind == "stall" and gap.missing == 9 and not gap.exact
    assert gap.duration_s == pytest.approx(0.33)


def test_short_pause_of_a_fast_topic_is_not_a_stall():
    times = [i * MS for i in range(20)] + [19 * MS + 50 * MS]  # 50x the period but under min_stall_s
    assert find_gaps("fast", times) == []


def test_counter_jump_and_time_going_back():
    det = GapDetector()
    gaps = find_gaps("t", [0, 10, 20, 15], counters=[0, 1, 5, 6], detector=det)
    assert [(g.kind, g.missing) for g in gaps] == [("counter", 3), ("backwards", 0)]
    assert det.counts() == {"stall": 0, "counter": 1, "backwards": 1}


def test_topics_are_independent():
    det = GapDetector(warmup=2)
    for i in range(5):
        det.observe("a", i * 10 * MS)
        det.observe("b", i * 400 * MS)
    assert det.gaps == []
    assert det.typical_period_ns("a") == pytest.approx(10 * MS)


def test_bad_settings_are_refused():
    with pytest.raises(GapConfigError):
        GapDetector(stall_factor=1.0)
    with pytest.raises(GapConfigError):
        GapDetector(warmup=0)
    with pytest.raises(GapConfigError):
        find_gaps("t", [1, 2], counters=[1])


def test_a_stall_of_a_counted_topic_says_exactly_what_it_lost():
    """A producer that sends in bursts (the sim mocap: 2-3 poses per ground
    truth sample, a few µs apart) has a median interval far below its period,
    so an estimate from it would be thousands of messages for a 0.3 s
    silence; the counter says none (late, not lost) or exactly how many."""
    times, counters, t = [], [], 0
    for burst in range(20):
        for k in range(3):
            times.append(t + k * 10_000)  # 10 µs apart within a burst
            counters.append(len(counters))
        t += 25 * MS
    times.append(times[-1] + 300 * MS)
    counters.append(counters[-1] + 1)
    times.append(times[-1] + 300 * MS)
    counters.append(counters[-1] + 5)
    gaps = find_gaps("mocap", times, counters)
    stalls = [g for g in gaps if g.kind == "stall"]
    assert [(g.missing, g.exact) for g in stalls] == [(0, True), (4, True)]
    assert [(g.kind, g.missing) for g in gaps if g.kind != "stall"] == [("counter", 4)]
    # without counters the same silence is estimated from the (burst) median
    (estimated, _) = [g for g in find_gaps("mocap", times) if g.kind == "stall"]
    assert not estimated.exact and estimated.missing > 1000
