"""Free-space roadmap: a closed wall splits the regions, a gap joins them, a
returned route is clear between its points, and on the robot model the arm's
home and a posture with the elbow bent the other way lie in different regions
while a route to a posture in home's region passes MuJoCo's own distance check."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.operators.ik.collision_pairs import CollisionPairs, filter_allowed_pairs, pairs_moved_by
from teledora.operators.ik.free_space_roadmap import UNKNOWN, FreeSpaceRoadmap

LOWER, UPPER = np.zeros(2), np.ones(2)


def closed_wall(q: np.ndarray) -> bool:
    return not 0.45 <= q[0] <= 0.55


def wall_with_gap(q: np.ndarray) -> bool:
    return not (0.45 <= q[0] <= 0.55 and not 0.8 <= q[1] <= 0.95)


def dense(route: list[np.ndarray], spacing: float) -> np.ndarray:
    out = []
    for a, b in zip(route[:-1], route[1:]):
        n = max(1, int(np.ceil(np.max(np.abs(b - a)) / spacing)))
        out += [a + (b - a) * (k / n) for k in range(n + 1)]
    return np.array(out)


def test_a_closed_wall_leaves_two_regions():
    rm = FreeSpaceRoadmap(LOWER, UPPER, closed_wall, np.random.default_rng(0), samples=400, neighbours=10,
                          resolution_rad=0.02)
    left, right = np.array([0.1, 0.5]), np.array([0.9, 0.5])
    assert rm.region(left) != UNKNOWN and rm.region(right) != UNKNOWN
    assert rm.region(left) != rm.region(right)
    assert rm.region(left) == rm.region(np.array([0.2, 0.95]))
    assert rm.route(left, right) is None
    sizes = list(rm.region_sizes().values())
    assert len(sizes) == 2 and sum(sizes) == 400
    # every node on the left of the wall shares one region, every node on the right the other
    regions = rm.node_regions()
    assert len(set(regions[rm.nodes[:, 0] < 0.45])) == 1 and len(set(regions[rm.nodes[:, 0] > 0.55])) == 1


def test_a_gap_joins_them_and_the_route_is_clear_between_its_points():
    rm = FreeSpaceRoadmap(LOWER, UPPER, wall_with_gap, np.random.default_rng(1), samples=600, neighbours=10,
                          resolution_rad=0.02)
    a, b = np.array([0.1, 0.1]), np.array([0.9, 0.1])
    assert rm.region(a) == rm.region(b) != UNKNOWN
    route = rm.route(a, b)
    assert route is not None
    np.testing.assert_array_equal(route[0], a)
    np.testing.assert_array_equal(route[-1], b)
    # checked at a twentieth of the roadmap's spacing: the wall is 0.1 wide
    points = dense(route, 0.001)
    assert all(wall_with_gap(q) for q in points)
    crossing = points[np.abs(points[:, 0] - 0.5) < 0.05]
    assert crossing.size and np.all((crossing[:, 1] >= 0.8) & (crossing[:, 1] <= 0.95))


def test_anchors_come_first_and_the_stream_decides_the_roadmap():
    anchor = np.array([0.2, 0.2])
    one = FreeSpaceRoadmap(LOWER, UPPER, closed_wall, np.random.default_rng(3), samples=50, anchors=[anchor])
    two = FreeSpaceRoadmap(LOWER, UPPER, closed_wall, np.random.default_rng(3), samples=50, anchors=[anchor])
    np.testing.assert_array_equal(one.nodes[0], anchor)
    np.testing.assert_array_equal(one.nodes, two.nodes)
    np.testing.assert_array_equal(one.node_regions(), two.node_regions())


def test_a_configuration_no_node_reaches_is_unknown():
    # a clear pocket inside the wall that no straight segment leaves
    def pocket(q: np.ndarray) -> bool:
        in_pocket = abs(q[0] - 0.5) < 0.01 and abs(q[1] - 0.5) < 0.01
        return closed_wall(q) and not (0.4 <= q[0] <= 0.6 and 0.4 <= q[1] <= 0.6) or in_pocket

    rm = FreeSpaceRoadmap(LOWER, UPPER, pocket, np.random.default_rng(0), samples=200, resolution_rad=0.02)
    assert rm.region(np.array([0.5, 0.5])) == UNKNOWN
    with pytest.raises(ValueError):
        FreeSpaceRoadmap(LOWER, UPPER, pocket, np.random.default_rng(0), samples=0)


# -- on the robot model --------------------------------------------------------

ARM = ["left_shoulder_pan", "left_shoulder_lift", "left_elbow_flex", "left_wrist_flex", "left_wrist_yaw_joint",
       "left_wrist_roll"]
CLEARANCE_M = 0.008


@pytest.fixture(scope="module")
def arm_space():
    model = mujoco.MjModel.from_xml_path(str(models.path("alohamini2/alohamini2.xml")))
    profile = models.load_profile()
    data = mujoco.MjData(model)
    adr = np.array([model.joint(n).qposadr[0] for n in ARM])
    home = np.array([profile.home_q()[n] for n in ARM])
    data.qpos[adr] = home
    allowed = filter_allowed_pairs(model)
    # the pairs only this arm's joints move (its links, mount, the carriage, the column): as the fallback's own check
    own = sorted(set(pairs_moved_by(model, allowed, profile.arms["left"].joints))
                 - set(pairs_moved_by(model, allowed, profile.arms["right"].joints))
                 - set(pairs_moved_by(model, allowed, [profile.lift_joint])))
    own_pairs = CollisionPairs(model, own)

    def clear(q: np.ndarray) -> bool:
        data.qpos[adr] = q
        mujoco.mj_kinematics(model, data)
        return own_pairs.min_distance(data, CLEARANCE_M + 1e-3) >= CLEARANCE_M

    lo = np.array([model.jnt_range[model.joint(n).id][0] for n in ARM])
    hi = np.array([model.jnt_range[model.joint(n).id][1] for n in ARM])
    rm = FreeSpaceRoadmap(lo, hi, clear, np.random.default_rng(0), samples=2500, anchors=[home])
    return model, data, adr, home, own, clear, rm


def test_home_and_an_elbow_bent_back_lie_in_different_regions(arm_space):
    model, data, adr, home, own, clear, rm = arm_space
    rng = np.random.default_rng(5)
    bent_back = None
    while bent_back is None:
        q = rng.uniform(rm.nodes.min(axis=0), rm.nodes.max(axis=0))
        q[2] = rng.uniform(-2.5, -1.5)
        if clear(q) and rm.region(q) != UNKNOWN:
            bent_back = q
    assert rm.region(home) != UNKNOWN
    assert rm.region(bent_back) != rm.region(home)
    # home's region holds no node with the elbow bent back past -1 rad
    regions = rm.node_regions()
    assert not np.any(rm.nodes[regions == rm.region(home), 2] < -1.0)


def test_a_route_in_homes_region_keeps_the_clearance_on_mujocos_distances(arm_space):
    model, data, adr, home, own, clear, rm = arm_space
    regions = rm.node_regions()
    mine = np.flatnonzero(regions == rm.region(home))
    goal = rm.nodes[mine[np.argmax(np.max(np.abs(rm.nodes[mine] - home), axis=1))]]  # the farthest node
    route = rm.route(home, goal)
    assert route is not None and len(route) > 2
    fromto = np.zeros(6)
    worst = np.inf
    for q in dense(route, 0.1):
        data.qpos[adr] = q
        mujoco.mj_kinematics(model, data)
        worst = min(worst, min(mujoco.mj_geomDistance(model, data, a, b, 0.05, fromto) for a, b in own))
    assert worst >= CLEARANCE_M
