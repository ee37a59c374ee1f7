"""Delay line: samples come out exactly ``delay`` after their stamp, in order."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from teledora.operators.estimation.delay_line import DelayLine, DelayLineError


def test_release_at_stamp_plus_delay():
    line: DelayLine[str] = DelayLine(30)
    line.push(100, "a")
    line.push(110, "b")
    assert line.release(129) == [] and line.latest is None and not line.has_output(129)
    assert line.has_output(130)
    assert line.release(130) == [(100, "a")]
    assert line.release(130) == [] and line.latest == (100, "a")  # kept after release
    assert line.release(1000) == [(110, "b")] and line.pending == 0


def test_out_of_order_and_negative_delay_rejected():
    line: DelayLine[int] = DelayLine(0)
    line.push(5, 1)
    line.push(5, 2)  # equal stamps are fine
    with pytest.raises(DelayLineError, match="older"):
        line.push(4, 3)
    line.release(10)
    with pytest.raises(DelayLineError, match="older"):
        line.push(4, 3)
    with pytest.raises(DelayLineError, match=">= 0"):
        DelayLine(-1)


@given(delay=st.integers(0, 50), stamps=st.lists(st.integers(0, 200), max_size=40),
       reads=st.lists(st.integers(0, 300), max_size=20))
def test_every_sample_comes_out_once_and_never_early(delay, stamps, reads):
    line: DelayLine[int] = DelayLine(delay)
    stamps = sorted(stamps)
    for i, s in enumerate(stamps):
        line.push(s, i)
    out = []
    for now in sorted(reads) + [10**6]:
        got = line.release(now)
        assert all(s <= now - delay for s, _ in got)
        out += got
    assert out == [(s, i) for i, s in enumerate(stamps)]
