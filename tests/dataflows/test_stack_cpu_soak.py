"""The stack benchmark's soak figures: resident memory at the start and end of
a span, and each periodic topic's rate in the first and last fifth of the window."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from stack_cpu import rate_drift, rss_growth  # noqa: E402

S = 1_000_000_000


def test_growth_is_read_between_the_first_and_last_sample_of_the_span():
    series = [(0, 100 * 1024), (10 * S, 200 * 1024), (20 * S, 210 * 1024), (30 * S, 400 * 1024)]
    assert rss_growth(series, 10 * S, 20 * S) == (200.0, 210.0)  # warm-up and after the window left out
    assert rss_growth(series, 25 * S, 26 * S) is None  # no two samples in the span: no figure


def test_a_steady_topic_keeps_its_rate_and_a_slowing_one_shows_it():
    t0, t1 = 0, 100 * S
    steady = np.arange(t0, t1, S // 50)  # 50 Hz throughout
    slowing = np.concatenate([np.arange(0, 50 * S, S // 50), np.arange(50 * S, t1, S // 25)])  # 50 Hz, then 25
    events = np.array([5 * S, 60 * S])  # a button now and then: not a rate
    drift = rate_drift({"a/steady": steady, "b/slowing": slowing, "c/events": events}, t0, t1)
    assert set(drift) == {"a/steady", "b/slowing"}
    assert drift["a/steady"] == (50.0, 50.0)
    assert drift["b/slowing"] == (50.0, 25.0)
