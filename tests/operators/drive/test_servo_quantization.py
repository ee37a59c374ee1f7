"""Servo quantization: angles on the 4096-tick grid, inside a range when one is given."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from teledora.operators.drive.servo_quantization import RAD_PER_TICK, quantize_rad, quantize_rad_within

angles = st.floats(min_value=-10.0, max_value=10.0)


@given(angles, angles, angles)
def test_within_is_the_nearest_grid_angle_inside_the_range(q: float, a: float, b: float) -> None:
    lo, hi = min(a, b), max(a, b)
    assume(hi - lo >= RAD_PER_TICK)
    out = float(quantize_rad_within([q], [lo], [hi])[0])
    assert lo <= out <= hi
    assert out / RAD_PER_TICK == pytest.approx(round(out / RAD_PER_TICK), abs=1e-9)
    # brute force over every grid angle in the range
    ticks = np.arange(np.ceil(lo / RAD_PER_TICK), np.floor(hi / RAD_PER_TICK) + 1) * RAD_PER_TICK
    assert abs(out - q) <= np.min(np.abs(ticks - q)) + 1e-12
    plain = float(quantize_rad([q])[0])
    if lo <= plain <= hi:
        assert out == plain


def test_a_range_without_a_tick_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one encoder tick"):
        quantize_rad_within([0.0], [0.1], [0.1 + RAD_PER_TICK / 4])
