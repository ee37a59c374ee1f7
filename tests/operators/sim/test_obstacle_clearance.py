"""operators/sim/obstacle_clearance: distances to the room's fixed obstacles."""

from __future__ import annotations

import mujoco
import pytest

from teledora import models
from teledora.operators.sim.obstacle_clearance import ObstacleClearance


@pytest.fixture(scope="module")
def clearance():
    profile = models.load_profile()
    return ObstacleClearance(mujoco.MjModel.from_xml_path(str(models.path(profile.scene))), profile), profile


def test_obstacles_are_the_rooms_fixed_geoms_without_the_floor(clearance):
    c, _ = clearance
    names = {c.model.geom(g).name for g in c.obstacle_geoms}
    assert names == {"wall_north", "wall_south", "wall_east", "wall_west", "pillar", "table_a", "table_b", "stand"}
    # the objects on the stand move (free joints): not obstacles, nor part of the robot
    objects = {"cube_red", "cube_blue", "cube_green", "cylinder"}
    assert {c.model.geom(g).name for g in c.robot_geoms} & objects == set()
    assert all(c.model.body(n).jntnum == 1 for n in objects)


def test_distance_shrinks_to_penetration_as_the_base_nears_the_pillar(clearance):
    c, profile = clearance
    home = profile.home_q()
    far = c.at(0.0, 0.0, 0.0, 0.0, home)
    near = c.at(1.2, -1.2, 0.0, 0.0, home)
    inside = c.at(1.6, -1.2, 0.0, 0.0, home)
    assert far.distance_m > near.distance_m > 0.0 > inside.distance_m
    assert near.obstacle_geom == inside.obstacle_geom == "pillar"
    # pillar radius 0.15 at x 1.8; at home the jaws' proxies reach about 0.30 m ahead of the base centre
    assert near.robot_geom.endswith("finger_proxy")
    assert near.distance_m == pytest.approx(1.8 - 0.15 - 1.2 - 0.30, abs=0.03)
