"""Feature names and units match the upstream AlohaMini LeRobot driver."""

from __future__ import annotations

import math

import pytest

from teledora.operators.datasets.lerobot_features import Units, arm_values, base_values, lift_value, state_names, teledora_joint


def test_names_in_upstream_order():
    names = state_names()
    assert len(names) == 18
    assert names[:7] == [f"arm_left_{j}.pos" for j in
                         ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw", "wrist_roll", "gripper")]
    assert names[7] == "arm_right_shoulder_pan.pos"
    assert names[14:] == ["x.vel", "y.vel", "theta.vel", "lift_axis.height_mm"]
    assert teledora_joint("left", "wrist_yaw") == "left_wrist_yaw_joint"


def test_units():
    joints = {teledora_joint(s, j): 0.0 for s in ("left", "right") for j in
              ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw", "wrist_roll", "gripper")}
    joints["left_shoulder_pan"] = math.pi / 2
    joints["right_gripper"] = 0.7
    v = arm_values(joints, Units(0.7))
    assert v[0] == pytest.approx(90.0) and v[6] == pytest.approx(100.0) and v[13] == pytest.approx(0.0)
    assert base_values(0.2, -0.1, math.pi) == pytest.approx([0.2, -0.1, 180.0])
    assert lift_value(0.25) == pytest.approx(250.0)
    del joints["left_wrist_yaw_joint"]
    with pytest.raises(KeyError):
        arm_values(joints, Units(0.7))
    with pytest.raises(ValueError):
        Units(0.0)
