"""An arm's roadmap of home's region: every node joined to home by segments
that MuJoCo's own distances find clear, one roadmap per robot, and the
fallback's seeds taken from it by grip pose."""

from __future__ import annotations

import copy

import mujoco
import numpy as np

from teledora import models
from teledora.operators.ik.arm_roadmap import ArmRoadmap
from teledora.operators.ik.global_search import _Search, own_pair_indices
from teledora.operators.ik.ik_config import IkConfig
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk

PROFILE = models.load_profile()
DATA = models.load_yaml("alohamini2/ik.yaml")
SAMPLES = 300  # small: the test is of the roadmap's promises, not of its reach


def make_ik(samples: int = SAMPLES) -> BimanualIk:
    data = copy.deepcopy(DATA)
    data["global_search"]["roadmap_samples"] = samples
    settings = IkConfig.from_mapping(data).settings
    model = build_ik_model(models.path(settings.solver.model), settings.solver.add_floor)
    return BimanualIk(model, PROFILE, settings)


def own_distance(ik: BimanualIk, side: str, arm_joints: np.ndarray) -> float:
    """The smallest distance MuJoCo measures between the pairs only this arm moves."""
    model, data = ik.model, mujoco.MjData(ik.model)
    data.qpos[:] = ik.configuration.q
    data.qpos[ik._qadr[ik.joint_index(PROFILE.arms[side].joints)]] = arm_joints
    mujoco.mj_kinematics(model, data)
    fromto = np.zeros(6)
    return min(mujoco.mj_geomDistance(model, data, int(g1), int(g2), 1.0, fromto)
               for g1, g2 in np.asarray(ik.collision_pairs.id_pairs)[own_pair_indices(ik, side)])


def test_every_node_is_joined_to_home_by_segments_mujoco_finds_clear():
    ik = make_ik()
    clearance = ik.fallback.path_clearance
    for side in ("left", "right"):
        roadmap = ik.fallback.roadmap[side]
        home = np.array([PROFILE.home_q()[n] for n in ik.arm_joint_names])[ik.fallback.index[side]]
        np.testing.assert_array_equal(roadmap.nodes[0], home)
        assert 10 < len(roadmap) < SAMPLES  # home's region only
        rng = np.random.default_rng(3)
        for b in [len(roadmap) - 1, *rng.choice(len(roadmap), size=4, replace=False)]:
            route = roadmap.path(0, int(b))
            np.testing.assert_array_equal(route[0], home)
            np.testing.assert_array_equal(route[-1], roadmap.nodes[b])
            for a, c in zip(route, route[1:]):
                n = max(1, int(np.ceil(np.max(np.abs(c - a)) / 0.1)))
                for k in range(n + 1):
                    assert own_distance(ik, side, a + (c - a) * (k / n)) >= clearance - 1e-9


def test_a_path_between_two_nodes_runs_through_their_common_branch():
    roadmap = make_ik().fallback.roadmap["left"]
    a, b = len(roadmap) - 1, len(roadmap) // 2
    route = roadmap.path(a, b)
    np.testing.assert_array_equal(route[0], roadmap.nodes[a])
    np.testing.assert_array_equal(route[-1], roadmap.nodes[b])
    back = roadmap.path(b, a)
    assert len(back) == len(route)
    for p, q in zip(route, reversed(back)):
        np.testing.assert_array_equal(p, q)
    assert len(roadmap.path(a, a)) == 1


def test_solvers_on_the_same_robot_share_one_roadmap():
    one, two = make_ik(), make_ik()
    assert one.model is not two.model
    assert one.fallback.roadmap["left"] is two.fallback.roadmap["left"]
    assert one.fallback.roadmap["left"] is not one.fallback.roadmap["right"]
    assert make_ik(SAMPLES + 1).fallback.roadmap["left"] is not one.fallback.roadmap["left"]
    assert isinstance(one.fallback.roadmap["left"], ArmRoadmap)


def test_search_seeds_after_home_and_the_mirror_are_roadmap_nodes_nearest_the_goal():
    ik = make_ik()
    fallback, side = ik.fallback, "left"
    roadmap = fallback.roadmap[side]
    target_node = roadmap.nodes[len(roadmap) // 3]
    q = ik.arm_q()
    q[fallback.index[side]] = target_node
    ik.reset(q)
    goal = ik.grip_pose(side)
    ik.reset(np.array([PROFILE.home_q()[n] for n in ik.arm_joint_names]))
    search = _Search(goal)
    while search.on_roadmap is None:  # from home: the arm is on its own roadmap
        fallback._check_entry(side, search)
    assert search.on_roadmap
    seeds = [fallback._next_seed(side, search) for _ in range(5)]
    np.testing.assert_array_equal(seeds[0], roadmap.nodes[0])  # home
    np.testing.assert_array_equal(seeds[2], target_node)  # the node whose grip is the goal ranks first
    for seed in seeds[2:]:
        assert any(np.array_equal(seed, node) for node in roadmap.nodes)
    for a in range(2, 5):  # spread apart
        for b in range(a + 1, 5):
            assert np.max(np.abs(seeds[a] - seeds[b])) > 0.3


def test_grip_poses_are_stored_at_lift_zero_and_ranked_at_the_lift_asked():
    ik = make_ik()
    roadmap, index = ik.fallback.roadmap["right"], ik.fallback.index["right"]
    lift = 0.12
    for k in (1, len(roadmap) // 2, len(roadmap) - 1):
        q = ik.arm_q()
        q[index] = roadmap.nodes[k]
        ik.reset(q, lift_joint=lift)
        pose = ik.grip_pose("right")  # MuJoCo's own kinematics
        np.testing.assert_allclose(roadmap.grip_pos[k] + [0.0, 0.0, lift], pose.position, atol=1e-9)
        assert roadmap.rank(pose, lift)[0] == k


def test_an_arm_in_another_piece_of_its_free_space_searches_with_random_seeds():
    ik = make_ik()
    fallback, side = ik.fallback, "left"
    roadmap, index = fallback.roadmap[side], fallback.index[side]
    rng = np.random.default_rng(5)
    while True:  # the elbow bent back past -1.5 rad: a posture home's region does not hold
        arm = rng.uniform(fallback.lower[index], fallback.upper[index])
        arm[2] = rng.uniform(-2.5, -1.5)
        if roadmap.clear(arm) and np.min(np.max(np.abs(roadmap.nodes - arm), axis=1)) <= 1.5:
            break
    q = ik.arm_q()
    q[index] = arm
    ik.reset(q)
    search = _Search(ik.grip_pose(side))
    calls = 0
    while search.on_roadmap is None:
        fallback._check_entry(side, search)
        calls += 1
    assert search.on_roadmap is False
    assert fallback.details()["searches_off_roadmap"] == 1
    assert calls <= 1 + 5 * 16 // 4  # at most five segments of 1.5 rad, four points a call
    seeds = [fallback._next_seed(side, search) for _ in range(4)]
    for seed in seeds[2:]:
        assert not any(np.array_equal(seed, node) for node in roadmap.nodes)
