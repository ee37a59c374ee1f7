import math

import pytest

from teledora.operators.geometry import Pose2D, Se2InputError, integrate_constant_twist, lerp_planar, wrap_angle


@pytest.mark.parametrize("steps", [1, 7, 100, 1000])
def test_full_circle_closes(steps):
    w = 0.65
    period = 2 * math.pi / w
    pose = Pose2D(1.0, -2.0, 0.3)
    p = pose
    for _ in range(steps):
        p = integrate_constant_twist(p, 0.25, 0.1, w, period / steps)
    assert math.hypot(p.x - pose.x, p.y - pose.y) < 1e-9
    assert abs(wrap_angle(p.yaw - pose.yaw)) < 1e-9


def test_half_circle_radius():
    v, w = 0.2, 0.5
    p = integrate_constant_twist(Pose2D(), v, 0.0, w, math.pi / w)
    assert p.x == pytest.approx(0.0, abs=1e-12)
    assert p.y == pytest.approx(2 * v / w, rel=1e-12)
    assert abs(abs(p.yaw) - math.pi) < 1e-12


def test_straight_line_and_series_branch_agree():
    p = integrate_constant_twist(Pose2D(0, 0, math.pi / 2), 1.0, 0.5, 0.0, 2.0)
    assert (p.x, p.y) == pytest.approx((-1.0, 2.0), abs=1e-15)
    # one closed-form step (yaw increment above the series threshold) equals two series steps
    one = integrate_constant_twist(Pose2D(), 1.0, 0.3, 1.5e-4, 1.0)
    half = integrate_constant_twist(Pose2D(), 1.0, 0.3, 1.5e-4, 0.5)
    two = integrate_constant_twist(half, 1.0, 0.3, 1.5e-4, 0.5)
    assert one.x == pytest.approx(two.x, abs=1e-12) and one.y == pytest.approx(two.y, abs=1e-12)
    assert one.y == pytest.approx(0.3 + 1.5e-4 / 2, abs=1e-8)


def test_rejects_bad_input():
    with pytest.raises(Se2InputError):
        integrate_constant_twist(Pose2D(), math.nan, 0, 0, 0.1)
    with pytest.raises(Se2InputError):
        integrate_constant_twist(Pose2D(), 0, 0, 0, -0.1)


def test_planar_interpolation_turns_the_short_way_round():
    a, b = (0.0, 0.0, math.pi - 0.1), (1.0, -2.0, -math.pi + 0.1)
    assert lerp_planar(a, b, 0.0) == a
    x, y, yaw = lerp_planar(a, b, 0.5)
    assert (x, y) == (0.5, -1.0)
    assert yaw == pytest.approx(math.pi)  # through pi, not through 0
    assert lerp_planar(a, b, 1.0)[2] == pytest.approx(math.pi + 0.1)  # the same heading as b, unwrapped
