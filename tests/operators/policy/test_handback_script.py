"""The scripted operator of a policy's run (operators/policy/handback_script.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from teledora.models.config_files import load_demo_script, load_pick_place_random
from teledora.operators.policy.authority import Authority, AuthorityConfig
from teledora.operators.policy.handback_script import handback_script, script_mapping
from teledora.operators.sim.pick_place_layout import placements, randomised_script
from teledora.operators.xr.scripted_operator import OperatorScript, ScriptedOperator

LAYOUT = load_pick_place_random()
DEMO = load_demo_script(LAYOUT.script)


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 10_000), episodes=st.integers(1, 4))
def test_drive_then_handback_then_the_demonstrators_episode_marks(seed, episodes):
    demonstrator = randomised_script(LAYOUT, DEMO, placements(LAYOUT, seed, episodes))
    script = handback_script(demonstrator)
    first = next(i for i, k in enumerate(demonstrator.keyframes) if k.ui_episode_start)
    assert script.keyframes[:first] == demonstrator.keyframes[:first]  # the drive to the scene, unchanged
    marks = [(k.ui_episode_start, k.ui_episode_keep, k.ui_episode_discard) for k in script.keyframes[first + 2:]]
    assert marks == [(k.ui_episode_start, k.ui_episode_keep, k.ui_episode_discard) for k in demonstrator.keyframes[first:]]
    def gaps(keys):
        return [b.t_s - a.t_s for a, b in zip(keys, keys[1:])]

    assert gaps(script.keyframes[first + 2:]) == pytest.approx(gaps(demonstrator.keyframes[first:]), abs=1e-5)  # timed as the demonstrator
    # after the drive no keyframe moves a hand, grips, clutches or presses a button
    for k in script.keyframes[first + 2:]:
        for h in k.hands.values():
            assert not h.offset_m.any() and h.trigger == h.squeeze == h.primary == h.secondary == 0.0
    # it round-trips through the YAML mapping the scripted xr node loads
    assert script_mapping(OperatorScript.from_mapping(script_mapping(script))) == script_mapping(script)


def test_the_selector_hands_back_during_the_gesture_and_nothing_takes_over():
    script = handback_script(randomised_script(LAYOUT, DEMO, placements(LAYOUT, 3, 2)))
    op = ScriptedOperator(script)
    authority = Authority(AuthorityConfig())
    events, t, seq = [], 0.0, 0
    while t <= script.keyframes[-1].t_s:
        now = int(t * 1e9)
        d = authority.step(now, estop_latched=False, controllers=op.report(t, now, seq), policy_stamp_ns=now)
        events += [(round(t, 2), e) for e in d.events]
        t += 1 / 90
        seq += 1
    assert [e for _, e in events] == ["handback"]
    start = next(k.t_s for k in script.keyframes if k.ui_episode_start)
    assert events[0][0] < start
