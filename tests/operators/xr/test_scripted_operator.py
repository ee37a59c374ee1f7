"""The scripted operator: deterministic, smooth, validated."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.contract.messages import encode
from teledora.models.config_files import load_demo_script
from teledora.operators.xr.scripted_operator import OperatorScript, ScriptClock, ScriptedOperator, ScriptError

SCRIPT = {
    "hand_origin_m": {"left": [0.3, 0.2, 1.0], "right": [0.3, -0.2, 1.0]},
    "keyframes": [
        {"t_s": 0.0},
        {"t_s": 1.0, "left": {"offset_m": [0.1, 0.0, 0.0], "rpy_deg": [0, 0, 90]}, "right": {"stick": [0.0, -1.0]}},
        {"t_s": 3.0, "left": {"offset_m": [0.1, 0.0, 0.0], "rpy_deg": [0, 0, 90], "trigger": 1.0}},
    ],
}


def test_poses_blend_with_zero_velocity_at_keyframes() -> None:
    op = ScriptedOperator(OperatorScript.from_mapping(SCRIPT))
    p0, _ = op.hand_pose("left", 0.0)
    p_half, _ = op.hand_pose("left", 0.5)
    p1, q1 = op.hand_pose("left", 1.0)
    np.testing.assert_allclose(p0, [0.3, 0.2, 1.0])
    np.testing.assert_allclose(p_half, [0.35, 0.2, 1.0])
    np.testing.assert_allclose(p1, [0.4, 0.2, 1.0])
    np.testing.assert_allclose(q1, [0, 0, np.sqrt(0.5), np.sqrt(0.5)], atol=1e-12)
    eps = 1e-4
    speed_at_start = np.linalg.norm(op.hand_pose("left", eps)[0] - p0) / eps
    assert speed_at_start < 1e-3


def test_sticks_and_buttons_hold_until_the_next_keyframe() -> None:
    op = ScriptedOperator(OperatorScript.from_mapping(SCRIPT))
    assert op.report(0.5, 0, 0)["right"]["stick"].tolist() == [0.0, 0.0]
    assert op.report(1.5, 0, 0)["right"]["stick"].tolist() == [0.0, -1.0]
    assert op.report(3.0, 0, 0)["left"]["trigger"] == 1.0


def test_page_buttons_episode_ones_included_hold_until_the_next_keyframe() -> None:
    script = dict(SCRIPT, keyframes=[{"t_s": 0.0}, {"t_s": 1.0, "ui_episode_start": True}, {"t_s": 1.3}])
    op = ScriptedOperator(OperatorScript.from_mapping(script))
    levels = [op.report(t, 0, 0)["ui_episode_start"] for t in (0.5, 1.1, 1.5)]
    assert levels == [False, True, False]
    encode("XrControllers", op.report(1.1, 0, 0))


def test_reports_are_valid_contract_messages_and_deterministic() -> None:
    op = ScriptedOperator(load_demo_script())
    for t in np.linspace(0, op.duration_s, 50):
        a, b = op.report(t, 1, 2), op.report(t, 1, 2)
        assert encode("XrControllers", a) == encode("XrControllers", b)
    assert op.settled_windows(1.0)  # the demo holds still so tracking can settle


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"keyframes": []}, "hand_origin_m"),
        (dict(SCRIPT, keyframes=[{"t_s": 1.0}]), "start at 0"),
        (dict(SCRIPT, keyframes=[{"t_s": 0.0}, {"t_s": 0.0}]), "strictly increase"),
        (dict(SCRIPT, keyframes=[{"t_s": 0.0, "left": {"offset_m": [0, 0]}}]), "3 finite numbers"),
        (dict(SCRIPT, keyframes=[{"t_s": 0.0, "left": {"grip": 1}}]), "unknown keys"),
    ],
)
def test_malformed_scripts_say_what_is_wrong(bad, match) -> None:
    with pytest.raises(ScriptError, match=match):
        ScriptedOperator(OperatorScript.from_mapping(bad))


GOAL_SCRIPT = {
    "hand_origin_m": {"left": [0.3, 0.2, 1.0], "right": [0.3, -0.2, 1.0]},
    "keyframes": [
        {"t_s": 0.0, "right": {"stick": [0.0, -0.5]}, "base": {"drive_to_m": [1.0, 0.0]}},
        {"t_s": 2.0, "base": {"turn_to_deg": 90}},
        {"t_s": 4.0},
    ],
    "base_driving": {"drive_stick": 0.9, "turn_stick": 0.9, "ease_within_m": 0.2, "ease_within_deg": 20.0,
                     "min_push": 0.3, "reached_m": 0.02, "reached_deg": 1.0, "max_wait_s": 5.0},
}


def test_goal_sticks_push_towards_the_goal_and_ease_off_near_it() -> None:
    op = ScriptedOperator(OperatorScript.from_mapping(GOAL_SCRIPT), stick_deadzone=0.1)
    far = op.report(0.5, 0, 0, pose=(0.0, 0.0, 0.0))
    near = op.report(0.5, 0, 0, pose=(0.95, 0.0, 0.0))
    assert far["left"]["stick"][1] == pytest.approx(-0.9) and far["right"]["stick"][0] == 0.0
    assert -0.9 < near["left"]["stick"][1] < -0.1  # eases off, still beyond the deadzone
    assert far["right"]["stick"][1] == -0.5  # the lift stick of the keyframe stays
    off_line = op.report(0.5, 0, 0, pose=(0.0, -0.2, 0.0))
    assert off_line["right"]["stick"][0] < -0.1  # turns left to keep the bearing
    passed = op.report(0.5, 0, 0, pose=(1.1, 0.0, 0.0))
    assert passed["left"]["stick"].tolist() == [0.0, 0.0]
    turn = op.report(2.5, 0, 0, pose=(1.0, 0.0, 0.0))
    assert turn["right"]["stick"][0] == pytest.approx(-0.9) and turn["left"]["stick"].tolist() == [0.0, 0.0]
    assert op.report(2.5, 0, 0, pose=None)["right"]["stick"].tolist() == [0.0, 0.0]  # nothing to steer by


def test_script_clock_waits_for_a_goal_then_moves_on() -> None:
    op = ScriptedOperator(OperatorScript.from_mapping(GOAL_SCRIPT), stick_deadzone=0.1)
    clock = ScriptClock(op)
    for _ in range(30):
        clock.advance(0.1, (0.5, 0.0, 0.0))  # the base has not got there
    assert clock.t == pytest.approx(2.0) and clock.t < 2.0 and clock.waiting
    assert op.report(clock.t, 0, 0, (0.5, 0.0, 0.0), clock.waiting)["right"]["stick"][1] == 0.0  # the lift rests meanwhile
    clock.advance(0.1, (1.0, 0.0, 0.0))  # reached
    assert clock.t == pytest.approx(2.1) and not clock.waiting
    for _ in range(100):
        clock.advance(0.1, (1.0, 0.0, 0.0))  # never turns: the clock gives up after max_wait_s
    assert clock.t > 4.0
    free = ScriptClock(op)
    assert free.advance(3.0, None) == 3.0  # without odometry goals do not hold the script


def test_base_goals_are_checked() -> None:
    bad = dict(GOAL_SCRIPT, keyframes=[{"t_s": 0.0, "base": {"drive_to_m": [1.0, 0.0], "turn_to_deg": 9}}, {"t_s": 1.0}])
    with pytest.raises(ScriptError, match="exactly one"):
        OperatorScript.from_mapping(bad)
    with pytest.raises(ScriptError, match="need base_driving"):
        OperatorScript.from_mapping({k: v for k, v in GOAL_SCRIPT.items() if k != "base_driving"})
    with pytest.raises(ScriptError, match="last keyframe"):
        OperatorScript.from_mapping(dict(GOAL_SCRIPT, keyframes=[{"t_s": 0.0}, {"t_s": 1.0, "base": {"turn_to_deg": 9}}]))


LIFT_SCRIPT = {
    "hand_origin_m": GOAL_SCRIPT["hand_origin_m"],
    "keyframes": [{"t_s": 0.0, "base": {"lift_to_m": 0.25}}, {"t_s": 1.0}],
    "base_driving": dict(GOAL_SCRIPT["base_driving"], lift_stick=1.0, lift_ease_within_m=0.06, lift_reached_m=0.003),
}


def test_lift_goal_moves_the_lift_stick_from_the_reported_height_and_holds_the_clock() -> None:
    op = ScriptedOperator(OperatorScript.from_mapping(LIFT_SCRIPT), stick_deadzone=0.1)
    low = op.report(0.5, 0, 0, lift_m=0.0)
    assert low["right"]["stick"].tolist() == [0.0, -1.0] and low["left"]["stick"].tolist() == [0.0, 0.0]  # full up
    near = op.report(0.5, 0, 0, lift_m=0.24)["right"]["stick"][1]
    assert -1.0 < near < -0.1  # eases off, still beyond the deadzone
    assert op.report(0.5, 0, 0, lift_m=0.27)["right"]["stick"][1] > 0.1  # above the goal: down
    assert op.report(0.5, 0, 0, lift_m=0.252)["right"]["stick"][1] == 0.0  # there
    assert op.report(0.5, 0, 0, lift_m=None)["right"]["stick"][1] == 0.0  # nothing to go by
    clock = ScriptClock(op)
    for _ in range(20):
        clock.advance(0.1, None, 0.1)
    assert clock.waiting and clock.t < 1.0
    clock.advance(0.1, None, 0.249)
    assert not clock.waiting and clock.t == pytest.approx(1.1)


def test_lift_goals_need_the_lift_settings() -> None:
    without = dict(LIFT_SCRIPT, base_driving=GOAL_SCRIPT["base_driving"])
    with pytest.raises(ScriptError, match="lift goals need"):
        OperatorScript.from_mapping(without)
    partial = dict(LIFT_SCRIPT, base_driving=dict(GOAL_SCRIPT["base_driving"], lift_stick=1.0))
    with pytest.raises(ScriptError, match="all of lift_stick"):
        OperatorScript.from_mapping(partial)
    with pytest.raises(ScriptError, match="exactly one"):
        OperatorScript.from_mapping(dict(LIFT_SCRIPT, keyframes=[{"t_s": 0.0, "base": {"lift_to_m": 0.2, "turn_to_deg": 9}},
                                                                 {"t_s": 1.0}]))
