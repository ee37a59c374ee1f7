"""Episodes of a recorded run judged at their KEEP (operators/evaluation/episode_outcomes.py)."""

from __future__ import annotations

import pytest

from teledora.operators.evaluation.episode_outcomes import events_in_episodes, judge_episodes
from teledora.operators.evaluation.placement_judge import JudgeTolerances

TOL = JudgeTolerances(xy_m=0.02, tilt_deg=10.0, rest_m=0.005, released_below_rad=0.1, rest_z_m=0.42)


def objects(stamp_ns: int, x: float, y: float, z: float = 0.42) -> dict:
    return {"stamp_ns": stamp_ns, "names": ["cube_blue", "cube_red"], "x": [0.44, x], "y": [-1.47, y], "z": [0.42, z],
            "qx": [0.0, 0.0], "qy": [0.0, 0.0], "qz": [0.0, 0.0], "qw": [1.0, 1.0]}


def joints(stamp_ns: int, gripper: float) -> dict:
    return {"stamp_ns": stamp_ns, "names": ["left_shoulder_pan", "left_gripper"], "position": [0.0, gripper]}


def mark(stamp_ns: int, event: str) -> dict:
    return {"stamp_ns": stamp_ns, "event": event}


def test_each_episode_is_judged_at_its_keep_against_its_own_goal() -> None:
    objs = [objects(100, 0.56, -1.47), objects(200, 0.70, -1.46, 0.47), objects(300, 0.70, -1.46),
            objects(400, 0.60, -1.45), objects(500, 0.58, -1.45)]
    js = [joints(150, 0.3), joints(290, 0.0), joints(450, 0.0)]
    marks = [mark(120, "start"), mark(310, "keep"), mark(320, "start"), mark(460, "keep")]
    out = judge_episodes(objs, js, marks, [(0.70, -1.47), (0.60, -1.45)], "cube_red", "left_gripper", TOL)
    # episode 1 at 310: the pose of 300 (set down), gripper of 290 (open)
    assert out[0].success and out[0].verdict.xy_error_m == pytest.approx(0.01)
    # episode 2 at 460: the pose of 400, before the cube was knocked at 500
    assert out[1].success and out[1].verdict.xy_error_m < 1e-9


def test_a_keep_while_still_holding_or_too_far_fails_with_the_reason() -> None:
    objs = [objects(100, 0.56, -1.47), objects(300, 0.75, -1.47)]
    marks = [mark(120, "start"), mark(310, "keep"), mark(320, "start"), mark(460, "keep")]
    out = judge_episodes(objs, [joints(290, 0.4)], marks, [(0.75, -1.47), (0.56, -1.47)], "cube_red", "left_gripper", TOL)
    assert not out[0].success and "not let go" in out[0].sentence()
    assert not out[1].success and "from the goal" in out[1].sentence()


def test_missing_discarded_and_unended_episodes_count_as_failures() -> None:
    objs = [objects(100, 0.70, -1.47)]
    js = [joints(100, 0.0)]
    goals = [(0.70, -1.47)] * 4
    marks = [mark(110, "start"), mark(120, "discard"), mark(130, "start"), mark(140, "start"), mark(150, "keep")]
    out = judge_episodes(objs, js, marks, goals, "cube_red", "left_gripper", TOL)
    assert [o.success for o in out] == [False, False, True, False]
    assert [o.note for o in out] == ["discarded", "never ended with KEEP or DISCARD", "", "never started"]


def test_no_pose_before_the_keep_or_no_gripper_state_fails() -> None:
    marks = [mark(110, "start"), mark(150, "keep")]
    out = judge_episodes([objects(200, 0.70, -1.47)], [joints(100, 0.0)], marks, [(0.70, -1.47)], "cube_red",
                         "left_gripper", TOL)
    assert not out[0].success and "no pose of cube_red" in out[0].note
    out = judge_episodes([objects(100, 0.70, -1.47)], [], marks, [(0.70, -1.47)], "cube_red", "left_gripper", TOL)
    assert not out[0].success and "unknown" in out[0].sentence()


def test_events_are_counted_inside_each_episode_only() -> None:
    states = [{"stamp_ns": t, "events": ev} for t, ev in (
        (105, ["left_anchor_dropped"]), (115, ["left_anchor_dropped", "left_anchored"]), (125, []),
        (135, ["left_anchor_dropped"]), (145, ["left_anchor_dropped"]), (170, ["left_anchor_dropped"]))]
    marks = [mark(110, "start"), mark(130, "keep"), mark(140, "start"), mark(150, "discard"), mark(160, "start")]
    assert events_in_episodes(marks, states, "left_anchor_dropped") == [1, 1, 1]
