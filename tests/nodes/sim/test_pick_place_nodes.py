"""The randomised pick and place in the sim and scripted xr nodes: the seed in
the environment places the cube (sim) and the demonstrator's hand follows
the same placements (xr)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dora.testing import MockNode

from teledora.models.config_files import PICK_PLACE_SCRIPT, load_demo_script, load_pick_place_random
from teledora.nodes.sim import sim
from teledora.nodes.xr import xr_scripted
from teledora.operators.contract.messages import decode
from teledora.operators.sim.pick_place_layout import hand_offset, placements

from tests.nodes.sim.test_sim_nodes import FastClock, NeverStops

LAYOUT = load_pick_place_random()


@pytest.mark.parametrize("seed", [0, 7, 123456789])
def test_sim_puts_the_cube_where_the_seed_says_and_it_rests_there(seed, monkeypatch) -> None:
    monkeypatch.setenv("TELEDORA_PICK_PLACE_SEED", str(seed))
    node = MockNode([])
    sim.main(node=node, clock=FastClock())
    first, last = (decode("ObjectPoses", node.outputs["objects"][i]) for i in (0, -1))
    want = placements(LAYOUT, seed, 0)[0]
    for msg in (first, last):
        i = msg["names"].index(LAYOUT.object)
        assert (msg["x"][i], msg["y"][i]) == pytest.approx(want, abs=1e-3)
        assert msg["z"][i] == pytest.approx(0.42, abs=2e-3) and abs(msg["qw"][i]) > 0.999


def test_sim_without_a_seed_keeps_the_scene_placement(monkeypatch) -> None:
    monkeypatch.delenv("TELEDORA_PICK_PLACE_SEED", raising=False)
    node = MockNode([])
    sim.main(node=node, clock=FastClock())
    msg = decode("ObjectPoses", node.outputs["objects"][0])
    i = msg["names"].index(LAYOUT.object)
    assert (msg["x"][i], msg["y"][i]) == pytest.approx(LAYOUT.hand.nominal_position_m, abs=1e-3)


def test_a_malformed_seed_stops_the_node_with_a_reason(monkeypatch) -> None:
    monkeypatch.setenv("TELEDORA_PICK_PLACE_SEED", "abc")
    with pytest.raises(ValueError, match="TELEDORA_PICK_PLACE_SEED"):
        sim.main(node=MockNode([]), clock=FastClock())


def test_scripted_xr_grips_over_each_seeded_pick_and_releases_over_each_target(monkeypatch) -> None:
    seed, episodes = 11, 3
    monkeypatch.setenv("TELEDORA_PICK_PLACE_SEED", str(seed))
    monkeypatch.setenv("TELEDORA_PICK_PLACE_EPISODES", str(episodes))
    monkeypatch.setenv("TELEDORA_XR_RATE_HZ", "20")
    monkeypatch.delenv("TELEDORA_XR_SCRIPT", raising=False)
    now = [0.0]
    node = NeverStops([])
    xr_scripted.main(node=node, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s))
    reports = [decode("XrControllers", v) for v in node.outputs["controllers"]]
    origin = load_demo_script(PICK_PLACE_SCRIPT).hand_origin_m["left"]
    trig = [r["left"]["trigger"] > 0.5 for r in reports]
    grips = [reports[i] for i in range(1, len(reports)) if trig[i] and not trig[i - 1]]
    releases = [reports[i] for i in range(1, len(reports)) if trig[i - 1] and not trig[i]]
    spots = placements(LAYOUT, seed, episodes)
    yaw = -math.pi / 2  # the script's last base turn: facing the stand
    assert len(grips) == len(releases) == episodes
    for k in range(episodes):
        for report, spot in ((grips[k], spots[k]), (releases[k], spots[k + 1])):
            got = np.array(report["left"]["position"][:2]) - origin[:2]
            assert got == pytest.approx(hand_offset(LAYOUT, yaw, spot), abs=1e-3)
