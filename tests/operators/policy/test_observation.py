"""The policy's observation in the export's layout, and its action mapped back to
bounded ArmTargets / BaseCommand / LiftCommand messages."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora import models
from teledora.operators.contract.messages import encode
from teledora.operators.datasets.lerobot_features import Units, state_names
from teledora.operators.drive.arm_command_limits import ArmCommandLimits
from teledora.operators.drive.base_command_limits import BaseCommandLimits
from teledora.operators.drive.lift_command_limits import LiftCommandLimits
from teledora.operators.geometry.quaternions import quat_to_matrix
from teledora.operators.ik.grip_kinematics import GripKinematics
from teledora.operators.policy.observation import (
    ActionMapper,
    ActionRejected,
    ObservationBuilder,
    PolicyFeatureError,
    check_features,
)

MS = 1_000_000
UNITS = Units(gripper_closed_rad=0.7)
PROFILE = models.load_profile()
MODEL = mujoco.MjModel.from_xml_path(str(models.path(PROFILE.model)))
NAMES = state_names()


def mapper(fps=30.0) -> ActionMapper:
    return ActionMapper(GripKinematics(MODEL, PROFILE), ArmCommandLimits.from_model(MODEL, PROFILE),
                        BaseCommandLimits.from_profile(PROFILE), LiftCommandLimits.from_profile(PROFILE), UNITS,
                        PROFILE.lift.travel_mm / 1000.0, fps, PROFILE.base_frame)


def joint_state(stamp_ns, values=None):
    values = values or {}
    names = list(PROFILE.arm_joint_names)
    return {"stamp_ns": stamp_ns, "names": names, "position": [values.get(n, 0.0) for n in names]}


def odom(stamp_ns, vx=0.0, vy=0.0, wz=0.0):
    return {"stamp_ns": stamp_ns, "vx": vx, "vy": vy, "wz": wz}


def lift(stamp_ns, h=0.0):
    return {"stamp_ns": stamp_ns, "height_m": h}


def test_observation_has_the_export_layout_and_units():
    b = ObservationBuilder(UNITS, max_age_s=0.1)
    b.on_joint_states(joint_state(0, {"left_shoulder_pan": 0.5, "right_wrist_yaw_joint": -0.25, "right_gripper": 0.35}))
    b.on_odometry(odom(5 * MS, vx=0.1, vy=-0.05, wz=math.radians(12.0)))
    b.on_lift_state(lift(3 * MS, 0.25))
    obs = b.build(20 * MS)
    assert obs.state.dtype == np.float32 and obs.state.shape == (18,)
    got = dict(zip(NAMES, obs.state.tolist()))
    assert got["arm_left_shoulder_pan.pos"] == pytest.approx(math.degrees(0.5), rel=1e-6)
    assert got["arm_right_wrist_yaw.pos"] == pytest.approx(-math.degrees(0.25), rel=1e-6)
    assert got["arm_right_gripper.pos"] == pytest.approx(50.0, rel=1e-6)
    assert got["arm_left_gripper.pos"] == pytest.approx(100.0)
    assert (got["x.vel"], got["y.vel"]) == pytest.approx((0.1, -0.05))
    assert got["theta.vel"] == pytest.approx(12.0, rel=1e-6)
    assert got["lift_axis.height_mm"] == pytest.approx(250.0)
    assert obs.stamp_ns == 0 and obs.lift_height_m == 0.25


def test_observation_waits_for_every_state_and_refuses_stale_ones():
    b = ObservationBuilder(UNITS, max_age_s=0.1)
    b.on_odometry(odom(0))
    assert b.build(0) is None and "arm joint state" in b.waiting and "lift state" in b.waiting
    b.on_joint_states(joint_state(0))
    b.on_lift_state(lift(0))
    assert b.build(100 * MS) is not None
    assert b.build(101 * MS) is None and "older than 0.1 s" in b.waiting


def test_a_joint_state_missing_a_joint_is_not_kept():
    b = ObservationBuilder(UNITS, max_age_s=0.1)
    msg = joint_state(0)
    msg["names"], msg["position"] = msg["names"][1:], msg["position"][1:]
    with pytest.raises(KeyError):
        b.on_joint_states(msg)
    assert b.build(0) is None


def action(**entries) -> np.ndarray:
    a = np.zeros(18)
    a[NAMES.index("arm_left_gripper.pos")] = a[NAMES.index("arm_right_gripper.pos")] = 100.0
    for k, v in entries.items():
        a[NAMES.index(k)] = v
    return a


def test_arm_entries_become_grip_targets_by_forward_kinematics_at_the_lift_height():
    m = mapper()
    a = action(**{"arm_left_shoulder_lift.pos": 20.0, "arm_left_elbow_flex.pos": -30.0, "arm_right_wrist_roll.pos": 45.0,
                  "arm_right_gripper.pos": 25.0, "lift_axis.height_mm": 200.0})
    cmds = m.map(a, lift_height_m=0.2, stamp_ns=7)
    q = {n: 0.0 for n in PROFILE.arm_joint_names}
    q.update(left_shoulder_lift=math.radians(20), left_elbow_flex=math.radians(-30), right_wrist_roll=math.radians(45),
             right_gripper=0.7 * 0.75)
    want = GripKinematics(MODEL, PROFILE).grips(list(q), list(q.values()), 0.2)
    for side in ("left", "right"):
        t = cmds.arm_targets[side]
        assert t["enabled"]
        np.testing.assert_allclose(t["position"], want[side][0], atol=1e-9)
        np.testing.assert_allclose(quat_to_matrix(t["orientation"]), want[side][1], atol=1e-9)
    assert cmds.arm_targets["right"]["gripper"] == pytest.approx(0.525)
    assert cmds.arm_targets["left"]["gripper"] == pytest.approx(0.0)
    assert cmds.arm_targets["frame_id"] == PROFILE.base_frame and cmds.arm_targets["stamp_ns"] == 7
    assert cmds.lift_cmd["velocity_m_s"] == pytest.approx(0.0)
    assert cmds.clamps == ()
    encode("ArmTargets", cmds.arm_targets), encode("BaseCommand", cmds.base_cmd), encode("LiftCommand", cmds.lift_cmd)


def test_values_over_their_limits_are_clamped_and_counted():
    m = mapper()
    lo, hi = ArmCommandLimits.from_model(MODEL, PROFILE).ranges["left_elbow_flex"]
    a = action(**{"arm_left_elbow_flex.pos": math.degrees(hi) + 10.0, "x.vel": 0.5, "theta.vel": 360.0,
                  "lift_axis.height_mm": 900.0})
    cmds = m.map(a, lift_height_m=0.1, stamp_ns=0)
    assert math.hypot(cmds.base_cmd["forward_m_s"], cmds.base_cmd["left_m_s"]) == pytest.approx(PROFILE.base.max_linear_m_s)
    assert cmds.base_cmd["yaw_rad_s"] == pytest.approx(PROFILE.base.max_yaw_rad_s)
    assert cmds.lift_cmd["velocity_m_s"] == pytest.approx(PROFILE.lift.max_speed_m_s)
    clamped = {c.quantity for c in cmds.clamps}
    assert {"left_elbow_flex q_ref", "linear speed", "yaw_rad_s", "lift height", "lift speed"} <= clamped
    assert m.counts()["clamped_by"]["lift height"] == 1
    # a small step of the lift is reached in one frame
    small = m.map(action(**{"lift_axis.height_mm": 101.0}), lift_height_m=0.1, stamp_ns=0)
    assert small.lift_cmd["velocity_m_s"] == pytest.approx(0.001 * 30.0)


@pytest.mark.parametrize("bad", [
    action(**{"x.vel": float("nan")}),
    action(**{"arm_right_shoulder_pan.pos": float("inf")}),
    action(**{"x.vel": 100.0}),                              # absurd: 400 x the cap
    action(**{"arm_left_wrist_flex.pos": 1000.0}),           # absurd: turns outside the range
    np.zeros(17),
])
def test_unusable_actions_are_rejected_whole_and_counted(bad):
    m = mapper()
    with pytest.raises(ActionRejected):
        m.map(bad, lift_height_m=0.0, stamp_ns=0)
    assert m.counts()["rejected"] == 1


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(st.lists(st.floats(-2000, 2000), min_size=18, max_size=18), st.floats(0.0, 0.6))
def test_any_action_is_rejected_or_bounded(values, lift_m):
    m = mapper()
    limits = ArmCommandLimits.from_model(MODEL, PROFILE).ranges
    try:
        cmds = m.map(values, lift_height_m=lift_m, stamp_ns=0)
    except ActionRejected:
        return
    b, v = cmds.base_cmd, cmds.lift_cmd["velocity_m_s"]
    assert math.hypot(b["forward_m_s"], b["left_m_s"]) <= PROFILE.base.max_linear_m_s * (1 + 1e-9)
    assert abs(b["yaw_rad_s"]) <= PROFILE.base.max_yaw_rad_s * (1 + 1e-9)
    assert abs(v) <= PROFILE.lift.max_speed_m_s * (1 + 1e-9)
    for side in ("left", "right"):
        lo, hi = limits[f"{side}_gripper"]
        assert lo <= cmds.arm_targets[side]["gripper"] <= hi
    encode("ArmTargets", cmds.arm_targets), encode("BaseCommand", cmds.base_cmd), encode("LiftCommand", cmds.lift_cmd)


def test_only_low_dimensional_policies_of_the_export_layout_are_served():
    check_features({"observation.state": [18]}, {"action": [18]})
    with pytest.raises(PolicyFeatureError, match="observation.images.chest"):
        check_features({"observation.state": [18], "observation.images.chest": [3, 480, 640]}, {"action": [18]})
    with pytest.raises(PolicyFeatureError, match="shape"):
        check_features({"observation.state": [14]}, {"action": [18]})
    with pytest.raises(PolicyFeatureError):
        check_features({"observation.state": [18]}, {"action": [18], "value": [1]})
