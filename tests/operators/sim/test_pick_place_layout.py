"""Where a seed puts the cube and its targets (operators/sim/pick_place_layout.py),
and the scripted demonstrator's keyframes that follow them."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from teledora import models
from teledora.models.config_files import PICK_PLACE_SCRIPT, load_demo_script, load_pick_place_random, load_profile
from teledora.operators.sim.pick_place_layout import (PickPlaceConfig, PickPlaceConfigError, hand_offset, placements,
                                                      randomised_script)

CONFIG = load_pick_place_random()
SEEDS = st.integers(min_value=0, max_value=2**63 - 1)
JAW_ROOM_M = 0.03  # free floor between the cube and any other object's footprint


def _scene_objects() -> dict[str, tuple[float, float, float]]:
    """Every other free body: world xy and the radius of a circle round its footprint."""
    model = mujoco.MjModel.from_xml_path(str(models.path(load_profile().scene)))
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    out = {}
    for j in range(model.njnt):
        if model.jnt_type[j] != mujoco.mjtJoint.mjJNT_FREE:
            continue
        body = model.body(model.jnt_bodyid[j])
        geom = model.geom(body.name)
        out[body.name] = (float(data.body(body.name).xpos[0]), float(data.body(body.name).xpos[1]),
                          float(np.hypot(geom.size[0], geom.size[1]) if geom.type == mujoco.mjtGeom.mjGEOM_BOX
                                else geom.size[0]))
    return out


OBJECTS = _scene_objects()
CUBE_RADIUS_M = OBJECTS[CONFIG.object][2]


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, episodes=st.integers(min_value=0, max_value=12), more=st.integers(min_value=0, max_value=5))
def test_placements_are_a_function_of_the_seed_and_do_not_depend_on_what_follows(seed, episodes, more) -> None:
    first = placements(CONFIG, seed, episodes)
    assert len(first) == episodes + 1
    assert placements(CONFIG, seed, episodes) == first
    assert placements(CONFIG, seed, episodes + more)[:episodes + 1] == first


@settings(max_examples=60, deadline=None)
@given(seed=SEEDS, episodes=st.integers(min_value=1, max_value=12))
def test_placements_lie_in_the_region_apart_and_clear_of_the_other_objects(seed, episodes) -> None:
    spots = placements(CONFIG, seed, episodes)
    for x, y in spots:
        assert CONFIG.region.contains(x, y)
        for name, (ox, oy, r) in OBJECTS.items():
            if name != CONFIG.object:
                assert math.dist((x, y), (ox, oy)) - r - CUBE_RADIUS_M >= JAW_ROOM_M, name
    assert all(math.dist(a, b) >= CONFIG.min_move_m for a, b in zip(spots, spots[1:]))


def test_different_seeds_give_different_placements() -> None:
    assert len({tuple(placements(CONFIG, s, 3)) for s in range(20)}) == 20


def test_the_region_lies_on_the_stand_with_the_cube_inside_its_top() -> None:
    model = mujoco.MjModel.from_xml_path(str(models.path(load_profile().scene)))
    stand = model.geom("stand")
    (cx, cy, _), (hx, hy, _) = stand.pos, stand.size
    r = CUBE_RADIUS_M
    assert cx - hx + r <= CONFIG.region.x_m[0] and CONFIG.region.x_m[1] <= cx + hx - r
    assert cy - hy + r <= CONFIG.region.y_m[0] and CONFIG.region.y_m[1] <= cy + hy - r


def test_the_scene_cube_is_where_the_hand_offsets_say() -> None:
    x, y, _ = OBJECTS[CONFIG.object]
    assert (x, y) == pytest.approx(CONFIG.hand.nominal_position_m, abs=1e-9)


def test_negative_seed_or_episodes_refused() -> None:
    with pytest.raises(ValueError):
        placements(CONFIG, -1, 2)
    with pytest.raises(ValueError):
        placements(CONFIG, 1, -2)


def test_a_region_too_small_for_min_move_is_refused() -> None:
    data = {**_mapping(), "min_move_m": 0.5}
    with pytest.raises(PickPlaceConfigError, match="min_move_m"):
        PickPlaceConfig.from_mapping(data)


def _mapping() -> dict:
    from teledora.models.config_files import PICK_PLACE_RANDOM, read_config_file

    return dict(read_config_file(PICK_PLACE_RANDOM)[1])


def test_hand_offset_turns_a_world_shift_into_the_base_frame() -> None:
    # the base faces -y (south): east (+x world) is the operator's left (+y), north is back (-x)
    ox, oy = CONFIG.hand.nominal_offset_m
    nx, ny = CONFIG.hand.nominal_position_m
    assert hand_offset(CONFIG, -math.pi / 2, (nx + 0.1, ny)) == pytest.approx((ox, oy + 0.1))
    assert hand_offset(CONFIG, -math.pi / 2, (nx, ny + 0.05)) == pytest.approx((ox - 0.05, oy))
    assert hand_offset(CONFIG, 0.0, (nx + 0.1, ny - 0.02)) == pytest.approx((ox + 0.1, oy - 0.02))


def _left(key) -> tuple:
    h = key.left
    return (round(key.t_s, 6), *np.round(h.offset_m, 6), *np.round(h.rpy_deg, 6), h.trigger, key.ui_episode_start,
            key.ui_episode_keep)


def test_the_shipped_scenario_is_the_generator_with_its_fixed_placements() -> None:
    # the hand-written script moves the cube 20 cm east and back: the generator
    # given those two moves writes the same keyframes
    shipped = load_demo_script(PICK_PLACE_SCRIPT)
    nominal = CONFIG.hand.nominal_position_m
    spots = [nominal, (nominal[0] + 0.20, nominal[1]), nominal]
    made = randomised_script(CONFIG, shipped, spots)
    assert [_left(k) for k in made.keyframes] == [_left(k) for k in shipped.keyframes]
    assert [k.base for k in made.keyframes if k.base] == [k.base for k in shipped.keyframes if k.base]


@settings(max_examples=20, deadline=None)
@given(seed=SEEDS, episodes=st.integers(min_value=1, max_value=6))
def test_each_episode_grips_over_its_pick_and_releases_over_its_target(seed, episodes) -> None:
    shipped = load_demo_script(PICK_PLACE_SCRIPT)
    spots = placements(CONFIG, seed, episodes)
    script = randomised_script(CONFIG, shipped, spots)
    keys = script.keyframes
    starts = [k.t_s for k in keys if k.ui_episode_start]
    keeps = [k.t_s for k in keys if k.ui_episode_keep]
    assert len(starts) == len(keeps) == episodes and all(a < b for a, b in zip(starts, keeps))
    grips = [k for a, k in zip(keys, keys[1:]) if k.left.trigger and not a.left.trigger]
    releases = [k for a, k in zip(keys, keys[1:]) if a.left.trigger and not k.left.trigger]
    assert len(grips) == len(releases) == episodes
    for k in range(episodes):
        assert tuple(grips[k].left.offset_m[:2]) == pytest.approx(hand_offset(CONFIG, -math.pi / 2, spots[k]))
        assert tuple(releases[k].left.offset_m[:2]) == pytest.approx(hand_offset(CONFIG, -math.pi / 2, spots[k + 1]))
        assert starts[k] < grips[k].t_s < releases[k].t_s < keeps[k]


def test_the_sim_places_a_free_object_at_rest_and_refuses_anything_else() -> None:
    from teledora.operators.sim.sim_physics import SimPhysics

    profile = load_profile()
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    sim = SimPhysics(model, profile)
    sim.place_object("cube_red", 0.70, -1.45)
    before = sim.data.body("cube_red").xpos.copy()
    assert before[:2] == pytest.approx([0.70, -1.45]) and before[2] == pytest.approx(0.42, abs=2e-3)
    sim.step(500)  # one second: it stays where it was put
    assert sim.data.body("cube_red").xpos == pytest.approx(before, abs=1e-3)
    with pytest.raises(ValueError, match="no free object"):
        sim.place_object("stand", 0.7, -1.45)
