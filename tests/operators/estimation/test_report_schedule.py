"""ReportSchedule: reports on the samples' stamps."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from teledora.operators.estimation.report_schedule import ReportSchedule, ReportScheduleError

MS = 1_000_000


def reported(period_ms: float, stamps_ms: list[float]) -> list[float]:
    schedule = ReportSchedule(round(period_ms * MS))
    return [s for s in stamps_ms if schedule.due(round(s * MS))]


def test_samples_one_period_apart_all_report() -> None:
    assert reported(20, [0, 20, 40, 60]) == [0, 20, 40, 60]


def test_faster_samples_report_once_a_period() -> None:
    assert reported(20, [10 * k for k in range(10)]) == [0, 20, 40, 60, 80]


def test_jitter_within_a_quarter_period_keeps_the_grid() -> None:
    assert reported(20, [0, 19, 41, 59, 80]) == [0, 19, 41, 59, 80]
    assert reported(20, [0, 14, 20]) == [0, 20]  # 14 ms is more than a quarter period early


def test_a_gap_gives_one_report_not_a_burst() -> None:
    assert reported(20, [0, 20, 100, 110, 120, 130, 140]) == [0, 20, 100, 120, 140]


def test_a_bad_period_is_refused() -> None:
    for bad in (0, -5):
        with pytest.raises(ReportScheduleError):
            ReportSchedule(bad)


@given(st.integers(1, 50 * MS), st.lists(st.integers(0, 100 * MS), min_size=1, max_size=200))
def test_reports_are_never_closer_than_three_quarters_of_a_period(period: int, steps: list[int]) -> None:
    schedule = ReportSchedule(period)
    stamp, last = 0, None
    for step in steps:
        stamp += step
        if schedule.due(stamp):
            assert last is None or stamp - last >= period - period // 4
            last = stamp
        else:
            assert last is not None and stamp - last < period  # a sample a whole period on always reports
