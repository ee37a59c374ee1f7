"""Joint-space route search: routes go round obstacles and are clear at the
check spacing, the search spends no more checks than it is given, gives up
where no route exists, and plans the same route for the same random stream."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.ik.route_planner import RoutePlanner

LOWER, UPPER = np.zeros(2), np.ones(2)


def wall_with_gap(q: np.ndarray) -> bool:
    """Clear unless inside a wall at x in [0.45, 0.55] that leaves a gap at y in [0.8, 0.9]."""
    in_wall = 0.45 <= q[0] <= 0.55 and not 0.8 <= q[1] <= 0.9
    return not in_wall


def closed_wall(q: np.ndarray) -> bool:
    return not 0.45 <= q[0] <= 0.55


def run(planner: RoutePlanner, per_call: int = 7) -> RoutePlanner:
    calls = 0
    while not planner.advance(per_call):
        calls += 1
        assert calls < 100_000
    return planner


def dense(start: np.ndarray, route: list[np.ndarray], spacing: float) -> np.ndarray:
    """Points along the route no more than ``spacing`` apart on either axis."""
    out, a = [], start
    for b in route:
        n = max(1, int(np.ceil(np.max(np.abs(b - a)) / spacing)))
        out += [a + (b - a) * (k / n) for k in range(n + 1)]
        a = b
    return np.array(out)


def test_a_route_goes_round_the_wall_through_the_gap():
    start, goal = np.array([0.1, 0.1]), np.array([0.9, 0.1])
    p = run(RoutePlanner(start, goal, LOWER, UPPER, wall_with_gap, np.random.default_rng(0),
                         step_rad=0.1, resolution_rad=0.01, max_checks=20_000))
    assert p.route is not None
    np.testing.assert_array_equal(p.route[-1], goal)
    # clear checked at a tenth of the planner's spacing: the wall is 0.1 wide, so
    # a route that cut through it would show here
    points = dense(start, p.route, 0.001)
    assert all(wall_with_gap(q) for q in points)
    crossing = points[np.abs(points[:, 0] - 0.5) < 0.05]
    assert crossing.size and np.all((crossing[:, 1] >= 0.8) & (crossing[:, 1] <= 0.9))


def test_a_straight_route_is_taken_when_clear():
    checked = []

    def clear(q):
        checked.append(q.copy())
        return True

    p = run(RoutePlanner(np.array([0.0, 0.0]), np.array([0.5, 0.25]), LOWER, UPPER, clear,
                         np.random.default_rng(0), resolution_rad=0.125))
    assert len(p.route) == 1 and p.checks == 4 == len(checked)  # 0.5 on x at 0.125 spacing
    np.testing.assert_array_equal(checked[0], [0.125, 0.0625])


def test_no_route_through_a_closed_wall_and_the_budget_holds():
    p = RoutePlanner(np.array([0.1, 0.5]), np.array([0.9, 0.5]), LOWER, UPPER, closed_wall,
                     np.random.default_rng(0), step_rad=0.1, resolution_rad=0.02, max_checks=500)
    spent = 0
    while not p.done:
        before = p.checks
        p.advance(3)
        assert p.checks - before <= 3
        spent += 1
    assert p.route is None
    # the last extension may finish its edge, but no new one starts past the budget
    assert 500 <= p.checks <= 500 + int(np.ceil(0.1 / 0.02))


def test_same_random_stream_same_route():
    routes = []
    for _ in range(2):
        p = run(RoutePlanner(np.array([0.1, 0.1]), np.array([0.9, 0.2]), LOWER, UPPER, wall_with_gap,
                             np.random.default_rng(3), step_rad=0.1, resolution_rad=0.01, max_checks=20_000), 5)
        routes.append(np.array(p.route))
    np.testing.assert_array_equal(routes[0], routes[1])


def test_bad_settings_are_refused():
    with pytest.raises(ValueError):
        RoutePlanner(LOWER, UPPER, LOWER, UPPER, closed_wall, np.random.default_rng(0), step_rad=0.0)
    with pytest.raises(ValueError):
        RoutePlanner(LOWER, UPPER, LOWER, UPPER, closed_wall, np.random.default_rng(0), max_checks=0)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.floats(0.15, 0.85), st.floats(0.15, 0.85), st.floats(0.02, 0.12)),
                min_size=1, max_size=6), st.integers(0, 2**32 - 1))
def test_any_route_found_among_round_obstacles_is_clear_at_the_spacing(discs, seed):
    """Random discs between two corners: whatever route comes back keeps out of
    every disc at the check spacing (a disc is never thinner than it)."""
    centres = np.array([d[:2] for d in discs])
    radii = np.array([d[2] for d in discs])

    def clear(q):
        return bool(np.all(np.linalg.norm(centres - q, axis=1) > radii))

    start, goal = np.array([0.02, 0.02]), np.array([0.98, 0.98])
    p = run(RoutePlanner(start, goal, LOWER, UPPER, clear, np.random.default_rng(seed),
                         step_rad=0.1, resolution_rad=0.01, max_checks=5_000))
    if p.route is not None:
        np.testing.assert_array_equal(p.route[-1], goal)
        # checked at the planner's own spacing, each checked point is clear
        assert all(clear(q) for q in dense(start, p.route, 0.01))
