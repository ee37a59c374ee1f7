"""The shipped demo script's base and lift driving, closed-loop as the xr
node plays it (script clock, goals steered to from the pose) and integrated
as the teleop scheme maps the sticks (deadzone, profile caps): a closed loop
of at least 5 m with turns in place both ways, the lift up and down, and the
robot (arms at their home posture, lift at its integrated height) at least
0.25 m from the room's obstacles, also when most reports come late. tests/dataflows/test_sim_dataflow.py checks the same
clearance on the sim's ground truth of a real run."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import load_demo_script, load_teleop_config
from teledora.operators.geometry import Pose2D, integrate_constant_twist
from teledora.operators.sim.obstacle_clearance import ObstacleClearance
from teledora.operators.xr.scripted_operator import ScriptClock, ScriptedOperator

DT = 0.01


def _axis(v: float, deadzone: float) -> float:
    return 0.0 if abs(v) <= deadzone else math.copysign((abs(v) - deadzone) / (1.0 - deadzone), v)


def closed_loop_drive(starved: float = 0.0, seed: int = 0):
    """(t, x, y, yaw, lift height, forward, yaw rate) every DT of wall time: the
    script clock and the goal steering fed with the pose the base reached, the
    sticks mapped as teleop maps them. ``starved``: the fraction of 0.5 s
    stretches in which the operator's reports arrive too late and teleop rests
    the base and lift (what an overloaded machine does to the demo)."""
    profile = models.load_profile()
    cfg = load_teleop_config(profile=profile)
    op = ScriptedOperator(load_demo_script(), stick_deadzone=cfg.stick_deadzone)
    clock = ScriptClock(op)
    rng = np.random.default_rng(seed)
    pose, lift, rows, t_wall, dropped = Pose2D(0.0, 0.0, 0.0), 0.0, [], 0.0, False
    while clock.t < op.duration_s and t_wall < 600.0:
        if round(t_wall / DT) % 50 == 0:
            dropped = rng.random() < starved
        xyyaw = (pose.x, pose.y, pose.yaw)
        t = clock.advance(DT, xyyaw)
        rep = op.report(t, 0, 0, xyyaw, clock.waiting)
        lx, ly = (_axis(float(v), cfg.stick_deadzone) for v in rep["left"]["stick"])
        rx, ry = (_axis(float(v), cfg.stick_deadzone) for v in rep["right"]["stick"])
        fwd, left = -ly * cfg.max_speed_m_s, -lx * cfg.max_speed_m_s
        wz, lift_v = -rx * cfg.max_yaw_rate_rad_s, -ry * cfg.max_lift_speed_m_s
        if dropped:
            fwd = left = wz = lift_v = 0.0
        rows.append((t_wall, pose.x, pose.y, pose.yaw, lift, fwd, wz))
        pose = integrate_constant_twist(pose, fwd, left, wz, DT)
        lift = min(max(lift + lift_v * DT, 0.0), profile.lift.travel_mm / 1000.0)
        t_wall += DT
    return np.array(rows)


def nominal_drive():
    return closed_loop_drive(0.0)


def test_the_loop_is_long_closed_turns_both_ways_and_ends_in_about_a_minute():
    rows = nominal_drive()
    xy = rows[:, 1:3]
    length = float(np.sum(np.linalg.norm(np.diff(xy, axis=0), axis=1)))
    assert length >= 5.0
    assert np.linalg.norm(xy[-1]) < 0.05  # back where it started
    turned = np.diff(np.unwrap(rows[:, 3]))
    # five left corners and one right turn (plus small bearing corrections on the straights)
    assert np.sum(turned[turned > 0]) == pytest.approx(5 * math.pi / 2, abs=0.15)
    assert np.sum(turned[turned < 0]) == pytest.approx(-math.pi / 2, abs=0.15)
    turning_fast = np.abs(rows[:, 6]) > 0.3
    assert turning_fast.sum() * DT > 10.0 and not np.any(np.abs(rows[turning_fast, 5]) > 0)  # corners turn in place
    assert rows[:, 4].max() > 0.2 and rows[-1, 4] < rows[:, 4].max() - 0.1  # lift up, then down
    assert 60.0 <= rows[-1, 0] <= 72.0  # the script's 70 s, less the wait that was not needed


@pytest.mark.parametrize("starved", [0.0, 0.3, 0.6])
def test_the_robot_keeps_clear_of_every_obstacle_even_when_starved(starved):
    """Nominal, and with 30 % or 60 % of the time lost to late reports: the
    goals are steered to from the pose, so the path keeps its shape (it only
    takes longer) and the nearest obstacle stays >= 0.25 m away."""
    profile = models.load_profile()
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    clearance = ObstacleClearance(model, profile)
    home = profile.home_q()
    rows = closed_loop_drive(starved, seed=1)
    worst = min((clearance.at(x, y, yaw, lift, home) for _, x, y, yaw, lift, _, _ in rows[::10]), key=lambda c: c.distance_m)
    assert worst.distance_m >= 0.25, worst
    assert np.linalg.norm(rows[-1, 1:3]) < 0.05 and abs(rows[-1, 3]) < np.radians(2.0)  # back at the start, facing +x
    if starved:
        assert rows[-1, 0] > nominal_drive()[-1, 0] + 5.0  # it took longer instead


def test_anywhere_in_the_rectangle_of_the_goals_is_clear():
    """The drive goals span a rectangle; a straight drive between two of its
    points stays inside, so a goal given up or overshot cannot lead the base
    out of it. Anywhere in it, any heading, lift low or high: >= 0.25 m clear."""
    profile = models.load_profile()
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.scene)))
    clearance = ObstacleClearance(model, profile)
    goals = np.array([k.base.drive_to_m for k in load_demo_script().keyframes if k.base is not None and k.base.drive_to_m is not None])
    (x0, y0), (x1, y1) = goals.min(axis=0), goals.max(axis=0)
    assert (x0, y0, x1, y1) == (-0.9, -0.7, 1.0, 0.6)
    home = profile.home_q()
    worst = min(
        (clearance.at(x, y, yaw, lift, home)
         for x in np.linspace(x0, x1, 20) for y in np.linspace(y0, y1, 14)
         for yaw in np.linspace(-np.pi, np.pi, 8, endpoint=False) for lift in (0.0, 0.3)),
        key=lambda c: c.distance_m,
    )
    assert worst.distance_m >= 0.25, worst
