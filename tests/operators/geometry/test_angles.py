import math

import numpy as np
import pytest

from teledora.operators.geometry import wrap_angle


@pytest.mark.parametrize(
    "angle, wrapped",
    [
        (0.0, 0.0),
        (3 * math.pi / 2, -math.pi / 2),
        (-math.pi, -math.pi),
        (math.pi, -math.pi),  # the range is [-pi, pi): +pi maps to -pi
        (7.0, 7.0 - 2 * math.pi),
        (-10.0, -10.0 + 4 * math.pi),
    ],
)
def test_wraps_into_minus_pi_to_pi(angle, wrapped):
    w = wrap_angle(angle)
    assert isinstance(w, float)
    assert -math.pi <= w < math.pi
    assert w == pytest.approx(wrapped, abs=1e-12)


def test_arrays_wrap_element_wise_like_scalars():
    angles = np.array([[np.pi + 0.1, -4.0], [0.25, 100.0]])
    w = wrap_angle(angles)
    assert isinstance(w, np.ndarray) and w.shape == angles.shape
    assert w[0, 0] == pytest.approx(-np.pi + 0.1)
    assert np.array_equal(w, np.vectorize(lambda a: wrap_angle(float(a)))(angles))
    assert np.all((w >= -np.pi) & (w < np.pi))
