"""Frame clock and the latest-at-or-before rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from teledora.operators.datasets.frame_clock import frame_times_ns, latest_at_or_before, sample_age_ns, sorted_order


def test_frame_times_are_exact_multiples():
    t = frame_times_ns(1_000, 1_000 + 1_000_000_000, 30)
    assert len(t) == 31 and t[0] == 1_000 and t[-1] == 1_000 + 1_000_000_000
    assert t[1] - t[0] == 33_333_333
    assert len(frame_times_ns(5, 4, 30)) == 0
    with pytest.raises(ValueError):
        frame_times_ns(0, 1, 0)


def test_latest_at_or_before_edges():
    s = np.array([10, 20, 20, 30])
    assert latest_at_or_before(s, np.array([5, 10, 19, 20, 29, 30, 99])).tolist() == [-1, 0, 0, 2, 2, 3, 3]
    with pytest.raises(ValueError):
        latest_at_or_before(np.array([2, 1]), np.array([3]))


@given(st.lists(st.integers(0, 1000), min_size=1, max_size=50), st.lists(st.integers(-10, 1010), max_size=50))
def test_latest_matches_a_scan(samples, queries):
    s = np.sort(np.array(samples))
    idx = latest_at_or_before(s, np.array(queries, dtype=np.int64))
    ages = sample_age_ns(s, np.array(queries, dtype=np.int64), idx)
    for q, i, age in zip(queries, idx, ages):
        before = [k for k, v in enumerate(s) if v <= q]
        assert i == (before[-1] if before else -1)
        assert age == (q - s[i] if i >= 0 else -1)


def test_sorted_order_is_stable():
    assert sorted_order(np.array([3, 1, 3, 2])).tolist() == [1, 3, 0, 2]
