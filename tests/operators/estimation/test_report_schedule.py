"""ReportSchedule: reports on a grid of the samples' stamps."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from teledora.operators.estimation.report_schedule import ReportSchedule, ReportScheduleError

MS = 1_000_000


def reports(period_ms: float, stamps_ms: list[float], **kw) -> list[list[float]]:
    """Per sample, the grid times (ms) it makes due."""
    schedule = ReportSchedule(round(period_ms * MS), **kw)
    return [[g / MS for g in schedule.due(round(s * MS))] for s in stamps_ms]


def test_samples_one_period_apart_each_make_one_report() -> None:
    assert reports(20, [0, 20, 40, 60]) == [[0], [20], [40], [60]]


def test_faster_samples_report_once_a_period() -> None:
    assert reports(20, [10 * k for k in range(7)]) == [[0], [], [20], [], [40], [], [60]]


def test_uneven_samples_still_give_one_report_per_period_on_the_grid() -> None:
    got = reports(20, [0, 12.4, 34.4, 52.5, 69.2, 88.8, 105.2, 117.9])
    assert got == [[0], [], [20], [40], [60], [80], [100], []]


def test_a_gap_is_filled_with_the_reports_it_held_up() -> None:
    assert reports(20, [0, 20, 105, 110]) == [[0], [20], [40, 60, 80, 100], []]


def test_a_gap_past_the_catch_up_limit_restarts_the_grid() -> None:
    schedule = ReportSchedule(20 * MS, max_catch_up_ns=100 * MS)
    assert schedule.due(0) == [0] and schedule.due(20 * MS) == [20 * MS]
    assert schedule.due(250 * MS) == [250 * MS] and schedule.restarts == 1
    assert schedule.due(270 * MS) == [270 * MS]


def test_bad_settings_are_refused() -> None:
    for bad in (0, -5):
        with pytest.raises(ReportScheduleError):
            ReportSchedule(bad)
    with pytest.raises(ReportScheduleError):
        ReportSchedule(20 * MS, max_catch_up_ns=10 * MS)


@given(st.integers(1 * MS, 50 * MS), st.lists(st.integers(0, 300 * MS), min_size=1, max_size=200))
def test_every_grid_time_up_to_the_last_sample_is_reported_once_in_order(period: int, steps: list[int]) -> None:
    schedule = ReportSchedule(period, max_catch_up_ns=10**12)
    stamp, out = 0, []
    for step in steps:
        stamp += step
        due = schedule.due(stamp)
        assert all(g <= stamp for g in due)
        out += due
    assert out == list(range(steps[0], stamp + 1, period))
