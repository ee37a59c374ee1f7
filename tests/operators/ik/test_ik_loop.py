"""IkLoop without dora: start-up, pending targets, stale targets, real-time step,
lift changes, speed-cap restart on re-enable, failed solves, homing on reset."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import load_ik_config
from teledora.operators.ik.ik_loop import IkLoop
from teledora.operators.ik.ik_settings import IkConfigError
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.contract.messages import MessageError

PROFILE = models.load_profile()
DATA = models.load_yaml("alohamini2/ik.yaml")
CONFIG = load_ik_config()
SETTINGS = CONFIG.settings
MODEL = build_ik_model(models.path(SETTINGS.solver.model), SETTINGS.solver.add_floor)
ARM = list(PROFILE.arm_joint_names)
HOME = PROFILE.home_q()
MS = 1_000_000


def make_loop() -> IkLoop:
    ik = BimanualIk(MODEL, PROFILE, SETTINGS)
    return IkLoop(ik, CONFIG.workspace, CONFIG.node, PROFILE)


def joints(t_ns: int, q: dict | None = None) -> dict:
    q = q or HOME
    return {"stamp_ns": t_ns, "names": ARM, "position": [q.get(n, 0.0) for n in ARM]}


def lift(h: float = 0.3) -> dict:
    return {"height_m": h}


def started(t_ns: int = 0, q: dict | None = None) -> IkLoop:
    loop = make_loop()
    loop.on_lift(lift())
    loop.on_joint_states(joints(t_ns, q))
    return loop


def arm(position, orientation, enabled=True, gripper=0.3) -> dict:
    return {"enabled": enabled, "position": list(position), "orientation": list(orientation), "gripper": gripper, "slow": False}


def targets(loop: IkLoop, offset_left=(0.0, 0.0, 0.0), offset_right=(0.0, 0.0, 0.0), left_enabled=True) -> dict:
    """Targets offset from the loop's current grip poses."""
    poses = {s: loop.ik.grip_pose(s) for s in ("left", "right")}
    return {
        "frame_id": PROFILE.base_frame,
        "left": arm(poses["left"].position + offset_left, poses["left"].orientation, enabled=left_enabled),
        "right": arm(poses["right"].position + offset_right, poses["right"].orientation),
    }


def goal_in_command_order(loop: IkLoop) -> np.ndarray:
    """The reference's current goal (where its plans stop), in JointCommands
    order; grippers read nan."""
    goal = dict(zip(loop.ik.arm_joint_names, loop.ik.reference.goal))
    return np.array([goal.get(n, np.nan) for n in ARM])


def assert_stops_within(previous: np.ndarray, goal: np.ndarray, q: np.ndarray) -> None:
    """Every arm joint of q lies between where it was and the goal it had: a
    hold brakes towards the last goal and never passes it."""
    idx = [i for i, n in enumerate(ARM) if not n.endswith("_gripper")]
    lo, hi = np.minimum(previous[idx], goal[idx]), np.maximum(previous[idx], goal[idx])
    assert np.all(q[idx] >= lo - 1e-12) and np.all(q[idx] <= hi + 1e-12)


def shaped_position(loop: IkLoop, side: str) -> np.ndarray:
    """Where the arm's speed limiter has got to (a zero-length step moves nothing)."""
    return loop.limiters[side].step(np.zeros(3), [0.0, 0.0, 0.0, 1.0], 0.0, False).position


def test_starts_only_from_a_joint_state_that_follows_the_lift():
    q = dict(HOME, left_elbow_flex=-0.4, right_gripper=9.0)
    loop = make_loop()
    loop.on_joint_states(joints(0, q))
    loop.on_lift(lift())
    assert not loop.initialized and loop.solve(1 * MS) is None  # the lift came after the joint state
    loop.on_joint_states(joints(2 * MS, q))
    cmd = loop.solve(3 * MS)
    assert cmd["status"] == "hold" and cmd["names"] == ARM
    ref = dict(zip(ARM, cmd["q_ref"]))
    assert ref["left_elbow_flex"] == pytest.approx(-0.4)
    assert ref["right_gripper"] == loop.ik.gripper_range("right")[1]  # measured gripper clamped to its range


def test_wrong_joint_names_or_frame_raise_and_change_nothing():
    loop = make_loop()
    loop.on_lift(lift())
    bad = joints(0)
    bad["names"] = [n.replace("right_wrist_roll", "right_wrist_spin") for n in ARM]
    with pytest.raises(MessageError, match="right_wrist_spin"):
        loop.on_joint_states(bad)
    assert not loop.initialized
    loop.on_joint_states(joints(0))
    msg = dict(targets(loop), frame_id="odom")
    with pytest.raises(MessageError, match="frame_id"):
        loop.on_targets(msg, 1 * MS)
    assert loop.targets is None


def test_a_target_right_after_a_solve_is_solved_on_the_next_due_tick():
    loop = started()
    assert loop.on_targets(targets(loop, offset_left=(0.05, 0, 0)), 10 * MS)
    loop.solve(10 * MS)
    newer = targets(loop, offset_left=(0.0, 0.0, 0.05))
    assert loop.config.min_solve_spacing_s * 1e9 > 1 * MS
    assert not loop.on_targets(newer, 11 * MS)
    assert loop.pending and loop.targets is newer
    assert not loop.tick_due(15 * MS)
    assert loop.tick_due(20 * MS)
    loop.on_joint_states(joints(20 * MS))
    assert loop.solve(20 * MS)["status"] == "ok"
    assert not loop.pending


def test_targets_older_than_the_timeout_hold_both_arms():
    loop = started()
    loop.on_targets(targets(loop, offset_left=(0.05, 0, 0), offset_right=(0.05, 0, 0)), 10 * MS)
    moving = loop.solve(10 * MS)
    assert moving["status"] == "ok"
    late = 10 * MS + int(loop.config.target_timeout_s * 1e9) + loop.period_ns
    loop.on_joint_states(joints(late))  # feedback stays fresh: only the target is old
    goal = goal_in_command_order(loop)
    cmd = loop.solve(late)
    assert cmd["status"] == "hold"
    assert {s: a.status for s, a in loop.arms.items()} == {"left": "stale_target", "right": "stale_target"}
    # the arms brake to the goal they had and stay there
    assert_stops_within(moving["q_ref"], goal, cmd["q_ref"])
    t = late
    for _ in range(20):
        t += loop.period_ns
        loop.on_joint_states(joints(t))
        cmd = loop.solve(t)
        assert cmd["status"] == "hold"
        assert_stops_within(moving["q_ref"], goal, cmd["q_ref"])
    np.testing.assert_array_equal(cmd["dq_ref"], 0.0)
    arm_idx = [i for i, n in enumerate(ARM) if not n.endswith("_gripper")]
    np.testing.assert_allclose(cmd["q_ref"][arm_idx], goal[arm_idx], atol=1e-12)


def test_the_step_follows_real_time_but_at_most_two_periods():
    """The speed-capped target moves by the elapsed time, so the cap holds in
    real time; after a stall it moves by two periods, not by the whole gap."""
    loop = started()
    step = loop.workspace.max_linear_speed_m_s * loop.ik.dt
    start = loop.ik.grip_pose("left").position
    msg = targets(loop, offset_left=(0.0, 0.0, 0.2))
    t = 10 * MS
    seen = [start]
    # first solve, 1.5 periods, a stall, then a target solved on arrival 0.3 periods later
    for gap_ns in (0, 15 * loop.period_ns // 10, 20 * loop.period_ns, 3 * loop.period_ns // 10):
        t += gap_ns
        loop.on_joint_states(joints(t))  # feedback and target stay fresh
        loop.on_targets(msg, t)
        loop.solve(t)
        assert loop.arms["left"].rate_limited
        seen.append(shaped_position(loop, "left"))
    moved = [float(np.linalg.norm(b - a)) for a, b in zip(seen, seen[1:])]
    assert moved == pytest.approx([step, 1.5 * step, 2.0 * step, 0.3 * step])


def test_a_lift_change_after_start_moves_the_reference_like_a_start_at_that_height():
    moved = started()
    moved.on_lift(lift(0.45))
    fresh = make_loop()
    fresh.on_lift(lift(0.45))
    fresh.on_joint_states(joints(0))
    for s in ("left", "right"):
        np.testing.assert_allclose(moved.ik.grip_pose(s).position, fresh.ik.grip_pose(s).position, atol=1e-12)
    assert moved.ik.grip_pose("left").position[2] != pytest.approx(started().ik.grip_pose("left").position[2])


def test_a_re_enabled_arm_restarts_its_speed_cap_from_where_it_is():
    loop = started()
    t = 0
    for _ in range(5):  # left tracks towards a goal: its speed limiter runs ahead of home
        t += 10 * MS
        loop.on_joint_states(joints(t))
        loop.on_targets(targets(loop, offset_left=(0.0, 0.0, 0.1)), t)
        loop.solve(t)
    goal = loop.targets["left"]["position"]
    sagged = dict(HOME, left_shoulder_lift=HOME["left_shoulder_lift"] - 0.5)
    t += 10 * MS
    loop.on_joint_states(joints(t, sagged))  # disabled and moved by hand
    loop.on_targets(dict(loop.targets, left=dict(loop.targets["left"], enabled=False)), t)
    loop.solve(t)
    assert loop.arms["left"].status == "disabled" and loop.resyncs == 1
    here = loop.ik.grip_pose("left").position
    t += 10 * MS
    loop.on_joint_states(joints(t, sagged))
    loop.on_targets(dict(loop.targets, left=dict(loop.targets["left"], enabled=True, position=goal)), t)
    loop.solve(t)
    shaped = shaped_position(loop, "left")
    # one capped step from the sagged pose, not from where the limiter was before the hold
    assert np.linalg.norm(shaped - here) == pytest.approx(loop.workspace.max_linear_speed_m_s * loop.ik.dt)


def test_a_failed_solve_marks_the_working_arms_failed_and_holds():
    loop, twin = started(), started()
    for lp in (loop, twin):
        lp.on_targets(targets(lp, offset_right=(0.05, 0, 0), left_enabled=False), 10 * MS)
        good = lp.solve(10 * MS)
    # the twin holds (no enabled arm) where the loop's solve fails: same motion
    twin.on_joint_states(joints(20 * MS))
    twin.on_targets(targets(twin, left_enabled=False) | {"right": dict(twin.targets["right"], enabled=False)}, 20 * MS)
    held = twin.solve(20 * MS)
    assert held["status"] == "hold"
    # a joint of the working configuration far outside its range: the QP has no solution
    q = loop.ik.configuration.q.copy()
    q[MODEL.jnt_qposadr[MODEL.joint("right_elbow_flex").id]] = 3.6
    loop.ik.configuration.update(q)
    loop.on_joint_states(joints(20 * MS))
    loop.on_targets(loop.targets, 20 * MS)
    cmd = loop.solve(20 * MS)
    assert cmd["status"] == "failed"
    np.testing.assert_array_equal(cmd["q_ref"], held["q_ref"])  # no new goal: the plan goes on
    np.testing.assert_array_equal(cmd["dq_ref"], held["dq_ref"])
    assert not np.array_equal(cmd["q_ref"], good["q_ref"])  # it was moving, and brakes within the caps
    assert loop.arms["right"].status == "failed" and not loop.arms["right"].was_active
    assert loop.arms["left"].status == "disabled"
    assert loop.details()["failed_solves"] == 1 and loop.details()["last_status"] == "failed"


# -- homing on a teleop reset request --------------------------------------------

ARM_ONLY = [i for i, n in enumerate(ARM) if not n.endswith("_gripper")]
OFFSET = dict(HOME, left_shoulder_lift=HOME["left_shoulder_lift"] - 0.5, left_elbow_flex=-0.2,
              right_shoulder_pan=0.5, right_wrist_flex=0.1, right_wrist_roll=0.6,
              left_gripper=0.4, right_gripper=0.2)


def teleop_state(reset_count: int, estop: bool = False) -> dict:
    return {"reset_count": reset_count, "estop_latched": estop}


def track(loop: IkLoop, t: int, cmd: dict | None, q: dict) -> dict:
    """Joint feedback at t: the last command reached exactly (or q before any)."""
    measured = q if cmd is None else dict(zip(cmd["names"], cmd["q_ref"]))
    loop.on_joint_states(joints(t, measured))
    return measured


def reset_requested(q: dict = OFFSET) -> IkLoop:
    loop = started(0, q)
    assert not loop.on_teleop_state(teleop_state(2))  # baseline
    assert loop.on_teleop_state(teleop_state(3))
    return loop


def test_a_reset_request_homes_both_arms_within_the_caps():
    loop = reset_requested()
    cap = SETTINGS.solver.arm_max_speed_rad_s
    t, cmd, statuses = 0, None, []
    for _ in range(1000):
        if not any(loop.homing.values()):
            break
        t += 10 * MS
        track(loop, t, cmd, OFFSET)
        new = loop.solve(t)
        assert new["status"] == "ok" or not any(loop.homing.values())  # the solve that finds both home holds
        assert np.max(np.abs(new["dq_ref"])) <= cap + 1e-9
        previous = cmd["q_ref"] if cmd else np.array([OFFSET[n] for n in ARM])
        assert np.max(np.abs(new["q_ref"][ARM_ONLY] - previous[ARM_ONLY])) <= cap * loop.ik.dt + 1e-9
        statuses.append({s: a.status for s, a in loop.arms.items()})
        cmd = new
    assert not any(loop.homing.values()), "homing must end"
    assert statuses[0] == {"left": "homing", "right": "homing"} and len(statuses) > 20  # moved, not jumped
    ref = dict(zip(ARM, cmd["q_ref"]))
    assert max(abs(ref[n] - HOME[n]) for n in ARM if not n.endswith("_gripper")) <= loop.config.home_tolerance_rad
    assert ref["left_gripper"] == ref["right_gripper"] == HOME["left_gripper"]
    # then the arms hold there (teleop keeps them paused: no target): they
    # finish braking to their last goal and stay, still within the tolerance
    assert cmd["status"] == "hold" and statuses[-1] == {"left": "no_target", "right": "no_target"}
    for _ in range(20):
        t += 10 * MS
        track(loop, t, cmd, OFFSET)
        held = loop.solve(t)
        assert held["status"] == "hold"
        cmd = held
    np.testing.assert_array_equal(held["dq_ref"], 0.0)
    ref = dict(zip(ARM, held["q_ref"]))
    assert max(abs(ref[n] - HOME[n]) for n in ARM if not n.endswith("_gripper")) <= loop.config.home_tolerance_rad
    assert loop.details()["resets"] == 1


def test_homing_that_does_not_reach_home_in_time_stops_and_holds():
    loop = reset_requested()
    t = 10 * MS
    track(loop, t, None, OFFSET)
    cmd = loop.solve(t)
    assert loop.arms["left"].status == "homing"
    # no solve for longer than the timeout (each solve steps two periods at most,
    # so the arms are still far from home): homing gives up and the arms hold
    t += int(loop.config.home_timeout_s * 1e9) + 10 * MS
    track(loop, t, cmd, OFFSET)
    goal = goal_in_command_order(loop)
    held = loop.solve(t)
    assert {s: a.status for s, a in loop.arms.items()} == {"left": "home_timeout", "right": "home_timeout"}
    assert held["status"] == "hold" and not any(loop.homing.values())
    assert_stops_within(cmd["q_ref"], goal, held["q_ref"])  # brakes to its last goal, no further
    assert loop.details()["home_timeouts"] == 2


def test_the_first_teleop_state_sets_the_baseline_and_does_not_reset():
    loop = started(0, OFFSET)
    assert not loop.on_teleop_state(teleop_state(7))  # a node that starts late
    assert not loop.on_teleop_state(teleop_state(7))
    loop.on_joint_states(joints(10 * MS, OFFSET))
    cmd = loop.solve(10 * MS)
    assert cmd["status"] == "hold" and not any(loop.homing.values())
    np.testing.assert_allclose(cmd["q_ref"][ARM_ONLY], [OFFSET[ARM[i]] for i in ARM_ONLY])
    assert not loop.on_teleop_state(teleop_state(0))  # teleop restarted: a new baseline
    assert loop.on_teleop_state(teleop_state(1))
    assert loop.homing == {"left": True, "right": True}
    with pytest.raises(MessageError, match="reset_count"):
        loop.on_teleop_state(teleop_state(-1))


def test_an_enabled_target_cancels_homing_for_that_arm_only():
    loop = started(0, OFFSET)
    loop.on_teleop_state(teleop_state(0))
    loop.on_targets(targets(loop), 0)  # enabled before the reset: does not cancel it
    assert loop.on_teleop_state(teleop_state(1))
    t, cmd = 0, None
    for _ in range(5):
        t += 10 * MS
        track(loop, t, cmd, OFFSET)
        cmd = loop.solve(t)
    assert {s: a.status for s, a in loop.arms.items()} == {"left": "homing", "right": "homing"}
    t += 10 * MS
    track(loop, t, cmd, OFFSET)
    here = loop.ik.grip_pose("left").position
    msg = targets(loop, offset_left=(0.0, 0.0, 0.1))
    msg["right"]["enabled"] = False
    loop.on_targets(msg, t)  # the operator resumed the left arm only
    assert loop.homing == {"left": False, "right": True}
    loop.solve(t)
    assert {s: a.status for s, a in loop.arms.items()} == {"left": "ok", "right": "homing"}
    # the left arm's own speed cap restarts from where homing left it
    assert np.linalg.norm(shaped_position(loop, "left") - here) == pytest.approx(loop.workspace.max_linear_speed_m_s * loop.ik.dt)


def test_stale_feedback_stops_homing_and_it_does_not_resume():
    loop = reset_requested()
    t, cmd = 0, None
    for _ in range(3):
        t += 10 * MS
        track(loop, t, cmd, OFFSET)
        cmd = loop.solve(t)
    assert loop.arms["left"].status == "homing"
    late = t + int(loop.config.joint_state_timeout_s * 1e9) + loop.period_ns  # no joint states since t
    goal = goal_in_command_order(loop)
    stopped = loop.solve(late)
    assert stopped["status"] == "hold" and {a.status for a in loop.arms.values()} == {"stale_feedback"}
    assert_stops_within(cmd["q_ref"], goal, stopped["q_ref"])
    assert not any(loop.homing.values())
    track(loop, late + 10 * MS, cmd, OFFSET)  # feedback is back
    assert loop.solve(late + 10 * MS)["status"] == "hold"


def test_a_latched_estop_stops_homing_and_refuses_a_reset_with_it():
    loop = reset_requested()
    track(loop, 10 * MS, None, OFFSET)
    assert loop.solve(10 * MS)["status"] == "ok"
    assert not loop.on_teleop_state(teleop_state(3, estop=True))
    assert not any(loop.homing.values())
    assert not loop.on_teleop_state(teleop_state(4, estop=True))
    assert not any(loop.homing.values())
    track(loop, 20 * MS, None, OFFSET)
    assert loop.solve(20 * MS)["status"] == "hold"


# the left arm on the other elbow branch: its grip within 0.5 mm of the home
# grip pose, its joints up to 1.66 rad from home (the shape a recorded demo ended in)
OTHER_BRANCH = dict(HOME, left_shoulder_lift=HOME["left_shoulder_lift"] - 1.6559,
                    left_elbow_flex=HOME["left_elbow_flex"] + 0.6093, left_wrist_flex=HOME["left_wrist_flex"] - 1.0455)


def test_homing_goes_to_the_home_joints_not_just_the_home_grip_pose():
    loop = started(0, OTHER_BRANCH)
    loop.ik.reset(HOME)
    home_grip = loop.ik.grip_pose("left").position
    loop.ik.reset(OTHER_BRANCH)
    assert np.linalg.norm(loop.ik.grip_pose("left").position - home_grip) < 5e-4  # the grip is (almost) home already
    assert not loop.on_teleop_state(teleop_state(0))
    assert loop.on_teleop_state(teleop_state(1))
    speed, cap = loop.config.home_joint_speed_rad_s, SETTINGS.solver.arm_max_speed_rad_s
    t, cmd, ramp, phases = 0, None, None, []
    for _ in range(1000):
        if not any(loop.homing.values()):
            break
        t += 10 * MS
        track(loop, t, cmd, OTHER_BRANCH)
        previous = cmd["q_ref"] if cmd else np.array([OTHER_BRANCH[n] for n in ARM])
        cmd = loop.solve(t)
        assert np.max(np.abs(cmd["q_ref"][ARM_ONLY] - previous[ARM_ONLY])) <= cap * loop.ik.dt + 1e-9
        now = loop.home_ramp["left"] if loop.homing["left"] else None
        if ramp is not None and now is not None:  # the joint goal moves at the homing speed
            assert np.max(np.abs(now - ramp)) <= speed * loop.ik.dt + 1e-9
        if loop.homing["left"]:
            phases.append("joints" if now is not None else "grip")
        ramp = None if now is None else now.copy()
        assert loop.ik.min_proxy_distance() >= SETTINGS.collision.guard_distance_m - 1e-9
    assert not any(loop.homing.values()) and loop.details()["home_timeouts"] == 0
    ref = dict(zip(ARM, cmd["q_ref"]))
    assert max(abs(ref[n] - HOME[n]) for n in ARM if not n.endswith("_gripper")) <= loop.config.home_tolerance_rad
    # first the grip target rests on the home grip pose, then the joints go home
    # along a line: 1.66 rad at the homing speed at the least
    settle = round(loop.config.home_settle_s / loop.ik.dt)
    assert phases[:settle] == ["grip"] * settle and phases[-1] == "joints"
    assert phases.count("joints") >= 1.6559 / speed / loop.ik.dt


# home with the elbows 0.41 rad open: the straight joint line home brings each
# wrist within 8.4 mm of its shoulder, inside the band the collision rows keep
# (8 mm + 2 mm margin), so the rows held the arms there until the timeout
# (seen after a reset chord in a recorded demo run)
ELBOWS_OPEN = dict(HOME, left_elbow_flex=-0.19, right_elbow_flex=-0.19)


def test_homing_plans_a_route_round_what_the_straight_joint_line_passes_through():
    loop = reset_requested(ELBOWS_OPEN)
    fallback = loop.ik.fallback
    start, home = (np.array([q[n] for n in PROFILE.arms["left"].joints]) for q in (ELBOWS_OPEN, HOME))
    line = [start + (home - start) * k / 20 for k in range(21)]
    assert not all(fallback._arm_clear("left", q) for q in line)  # the case this covers
    cap = SETTINGS.solver.arm_max_speed_rad_s
    t, cmd = 0, None
    for _ in range(1000):
        if not any(loop.homing.values()):
            break
        t += 10 * MS
        track(loop, t, cmd, ELBOWS_OPEN)
        previous = cmd["q_ref"] if cmd else np.array([ELBOWS_OPEN[n] for n in ARM])
        cmd = loop.solve(t)
        assert np.max(np.abs(cmd["q_ref"][ARM_ONLY] - previous[ARM_ONLY])) <= cap * loop.ik.dt + 1e-9
        assert loop.ik.min_proxy_distance() >= SETTINGS.collision.guard_distance_m - 1e-9
    details = loop.details()
    assert details["home_timeouts"] == 0 and details["home_routes_not_found"] == 0
    assert t <= 4 * 10**9  # well inside the 10 s timeout
    ref = dict(zip(ARM, cmd["q_ref"]))
    assert max(abs(ref[n] - HOME[n]) for n in ARM if not n.endswith("_gripper")) <= loop.config.home_tolerance_rad


def test_home_grip_poses_are_the_grip_poses_of_the_home_configuration():
    loop = started(0, OFFSET)
    loop.on_lift(lift(0.45))
    poses = loop.home_grip_poses()
    loop.ik.reset(HOME)
    for s in ("left", "right"):
        np.testing.assert_allclose(poses[s].position, loop.ik.grip_pose(s).position, atol=1e-12)
        assert abs(float(np.dot(poses[s].orientation, loop.ik.grip_pose(s).orientation))) == pytest.approx(1.0)


def test_homing_speed_must_be_positive():
    with pytest.raises(IkConfigError, match="home_joint_speed_rad_s"):
        replace(CONFIG.node, home_joint_speed_rad_s=0.0)
    with pytest.raises(IkConfigError, match="home_settle_s"):
        replace(CONFIG.node, home_settle_s=-1.0)
