"""MuJoCo sim physics: actuator tracking, kinematic base, name-addressed commands."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.operators.contract.messages import MessageError
from teledora.operators.sim.sim_physics import SimPhysics


@pytest.fixture(scope="module")
def profile():
    return models.load_profile()


@pytest.fixture()
def sim(profile):
    return SimPhysics(mujoco.MjModel.from_xml_path(str(models.path(profile.scene))), profile)


def test_starts_at_home_with_the_lift_on_the_floor(sim, profile) -> None:
    js = sim.joint_state()
    home = profile.home_q()
    assert js["names"] == list(profile.arm_joint_names)
    np.testing.assert_allclose(js["position"], [home[j] for j in js["names"]])
    assert sim.lift_height_m() == pytest.approx(0.0)


def test_position_actuators_reach_a_commanded_pose(sim, profile) -> None:
    names = ["right_elbow_flex", "left_shoulder_pan", "left_gripper"]  # any order, any subset
    target = np.array([-0.3, 0.25, 0.5])
    sim.command_joints(names, target, np.zeros(3))
    sim.step(1500)  # 3 s
    js = sim.joint_state()
    got = np.array([js["position"][js["names"].index(n)] for n in names])
    np.testing.assert_allclose(got, target, atol=0.02)


def test_feedforward_enters_the_actuator_input(sim) -> None:
    sim.command_joints(["left_elbow_flex"], [0.1], [1.0])
    act = sim.model.actuator("left_elbow_flex").id
    assert sim.data.ctrl[act] == pytest.approx(0.1 + 8.0 / 80.0)


def test_unknown_joint_names_apply_nothing(sim) -> None:
    before = sim.data.ctrl.copy()
    with pytest.raises(MessageError, match="unknown"):
        sim.command_joints(["left_elbow_flex", "tail"], [0.5, 0.5], [0.0, 0.0])
    np.testing.assert_array_equal(sim.data.ctrl, before)


def test_lift_follows_height_targets(sim) -> None:
    sim.set_lift_height(0.25)
    sim.step(1500)
    assert sim.lift_height_m() == pytest.approx(0.25, abs=2e-3)


def test_kinematic_base_drives_an_exact_circle(sim) -> None:
    # v = 0.2 m/s, w = 0.5 rad/s: a full circle takes 4*pi s and closes on itself
    sim.set_base(0.0, 0.0, 0.0, 0.2, 0.0, 0.5)
    steps = int(round(4 * math.pi / sim.model.opt.timestep))
    sim.step(steps)
    gt = sim.ground_truth()
    t = steps * sim.model.opt.timestep
    # where the exact arc ends after t seconds
    r = 0.2 / 0.5
    expected = np.array([r * math.sin(0.5 * t), r * (1 - math.cos(0.5 * t))])
    np.testing.assert_allclose([gt["x"], gt["y"]], expected, atol=1e-9)
    assert gt["vx"] == 0.2 and gt["wz"] == 0.5
