import numpy as np
import pytest

from teledora.operators.lidar.footprint import Footprint, FootprintError


def test_points_inside_and_outside_a_square():
    fp = Footprint.rectangle(-0.2, 0.2, -0.1, 0.1)
    inside = fp.contains([0.0, 0.19, 0.21, 0.0, np.nan], [0.0, 0.09, 0.0, 0.11, 0.0])
    assert inside.tolist() == [True, True, False, False, False]


def test_padding_grows_the_polygon():
    fp = Footprint.rectangle(-0.2, 0.2, -0.1, 0.1, padding_m=0.05)
    assert fp.contains([0.24, 0.26], [0.0, 0.0]).tolist() == [True, False]


def test_concave_polygon_uses_even_odd_rule():
    # a U shape opening towards +y
    fp = Footprint([[0, 0], [3, 0], [3, 3], [2, 3], [2, 1], [1, 1], [1, 3], [0, 3]])
    assert fp.contains([0.5, 1.5, 1.5, 2.5], [2.0, 2.0, 0.5, 2.0]).tolist() == [True, False, True, True]


def test_malformed_polygons_are_refused():
    with pytest.raises(FootprintError):
        Footprint([[0, 0], [1, 0]])
    with pytest.raises(FootprintError):
        Footprint([[0, 0], [1, 0], [np.inf, 1]])
