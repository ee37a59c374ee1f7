import numpy as np
import pytest

from teledora.operators.lidar.revolution_assembler import RevolutionAssembler


def _turn(n, start_ns, period_ns):
    angle = np.arange(n) * 360.0 / n
    start = np.zeros(n, dtype=bool)
    start[0] = True
    arrival = start_ns + (np.arange(n) * period_ns) // n
    return start, angle, np.full(n, 1.5), np.full(n, 40.0), arrival


def test_turns_are_cut_at_start_flags_and_timed_from_start_to_start():
    asm = RevolutionAssembler(min_samples=10)
    out = []
    for k in range(3):
        out += asm.add(*_turn(100, 1_000_000_000 + k * 200_000_000, 200_000_000))
    # the third turn is still open: it closes at the next start flag
    assert len(out) == 2
    assert out[0].start_ns == 1_000_000_000 and out[0].scan_time_s == pytest.approx(0.2)
    assert len(out[0]) == 100 and out[1].start_ns == 1_200_000_000


def test_samples_before_the_first_start_flag_are_discarded_and_counted():
    asm = RevolutionAssembler(min_samples=10)
    start, angle, dist, q, arr = _turn(100, 0, 200_000_000)
    start[0] = False
    assert asm.add(start, angle, dist, q, arr) == []
    assert asm.discarded_before_first_start == 100


def test_start_time_is_moved_back_by_the_angle_already_swept():
    asm = RevolutionAssembler(min_samples=1, nominal_scan_time_s=0.2)
    # first sample of the turn arrives at 36 deg: the turn began 0.02 s earlier
    asm.add([True], [36.0], [1.0], [1.0], [1_000_000_000])
    out = asm.add([False] * 5 + [True], [100, 150, 200, 250, 300, 0.0], [1.0] * 6, [1.0] * 6,
                  [1_050_000_000] * 5 + [1_180_000_000])
    assert out[0].start_ns == 980_000_000
    assert out[0].scan_time_s == pytest.approx(0.2)


def test_short_and_overlong_turns_are_dropped():
    asm = RevolutionAssembler(min_samples=50, max_scan_time_s=0.5)
    asm.add(*_turn(10, 0, 100_000_000))
    asm.add(*_turn(100, 100_000_000, 100_000_000))  # closes the 10-sample turn
    assert asm.dropped_short == 1
    asm.add(*_turn(100, 2_000_000_000, 100_000_000))  # the 100-sample turn lasted 1.9 s
    assert asm.dropped_slow == 1 and asm.revolutions == 0


def test_a_turn_that_never_ends_is_bounded_dropped_and_counted():
    asm = RevolutionAssembler(min_samples=10, max_samples=500, max_scan_time_s=0.5)
    asm.add(*_turn(100, 0, 100_000_000))  # a normal turn opens
    frozen = np.zeros(1000, dtype=bool), np.full(1000, 42.0), np.full(1000, 1.0), np.full(1000, 40.0), np.arange(1000) * 500_000
    for _ in range(10):  # the motor froze: samples keep coming, no start flag
        asm.add(*frozen)
        assert asm.held_samples <= 500
    assert asm.dropped_long == 1 and asm.discarded_overlong == 100 + 10_000 - 0
    # the next start flag closes it without a revolution; a slow one is also counted slow
    assert asm.add(*_turn(100, 6_000_000_000, 100_000_000)) == []
    assert asm.dropped_slow == 1 and asm.last_dropped_scan_time_s == pytest.approx(6.0)
    out = asm.add(*_turn(100, 6_100_000_000, 100_000_000))
    assert len(out) == 1 and asm.held_samples == 100
