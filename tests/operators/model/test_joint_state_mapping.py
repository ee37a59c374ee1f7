"""Joint state mapping: name -> qpos addresses, whole-message rejection, missing
groups, and second-publisher detection."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.operators.model.joint_state_mapping import (
    JointGroup,
    JointStateError,
    JointStateMapping,
    ModelJointError,
    PoseState,
    PublisherWatch,
    qpos_addresses,
)

PROFILE = models.load_profile()
LEFT = PROFILE.arms["left"].all_joints
RIGHT = PROFILE.arms["right"].all_joints
GROUPS = [
    JointGroup("left_arm", LEFT),
    JointGroup("right_arm", RIGHT),
    JointGroup("lift", ("vertical_move",)),
    JointGroup("base", ("base_x", "base_y", "base_yaw")),
]
ARMS = ("left_arm", "right_arm")


@pytest.fixture(scope="module")
def model() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(str(models.path(PROFILE.model)))


@pytest.fixture()
def mapping(model) -> JointStateMapping:
    return JointStateMapping(qpos_addresses(model), GROUPS)


def test_addresses_come_from_joint_names_not_order(model):
    addr = qpos_addresses(model)
    for name in LEFT + RIGHT + ("vertical_move", "base_x", "base_yaw"):
        assert addr[name] == model.joint(name).qposadr[0]
    assert len(set(addr.values())) == len(addr)


def test_message_order_does_not_cross_arms(mapping):
    names = list(RIGHT) + list(LEFT)  # right first, reversed inside too
    names = names[::-1]
    values = np.arange(len(names), dtype=float)
    groups = mapping.check(names, values, allowed_groups=ARMS)
    qpos = np.zeros(18)
    for vals in groups.values():
        mapping.write(qpos, vals)
    for n, v in zip(names, values):
        assert qpos[mapping.addresses[n]] == v


@pytest.mark.parametrize(
    "names, values, reason",
    [
        (list(LEFT) + list(RIGHT)[:-1], np.zeros(13), "incomplete"),
        (list(LEFT) + list(RIGHT)[:-1] + [LEFT[0]], np.zeros(14), "duplicate"),
        (list(LEFT) + ["left_elbow_typo"] + list(RIGHT)[1:], np.zeros(14), "unknown"),
        (list(LEFT) + list(RIGHT), np.zeros(13), "names but"),
        (list(LEFT) + list(RIGHT), np.r_[np.zeros(13), np.nan], "non-finite"),
        (list(LEFT) + list(RIGHT), np.r_[np.inf, np.zeros(13)], "non-finite"),
        (list(LEFT) + ["vertical_move"], np.zeros(8), "unknown"),
        ([], np.zeros(0), "no joints"),
    ],
)
def test_bad_messages_are_rejected_whole(mapping, names, values, reason):
    with pytest.raises(JointStateError, match=reason):
        mapping.check(names, values, allowed_groups=ARMS)


def test_one_complete_arm_is_accepted(mapping):
    groups = mapping.check(list(LEFT), np.ones(7), allowed_groups=ARMS)
    assert set(groups) == {"left_arm"}


def test_model_without_a_configured_joint_is_refused(model):
    with pytest.raises(ModelJointError, match="no joints named"):
        JointStateMapping(qpos_addresses(model), [JointGroup("base", ("root_x_axis_joint",))])


def test_pose_waits_for_every_group_and_never_writes_a_default(mapping):
    pose = PoseState(mapping)
    qpos = np.full(18, 7.0)
    assert pose.missing_groups() == ["left_arm", "right_arm", "lift", "base"]
    pose.update(mapping.check(list(LEFT) + list(RIGHT), np.ones(14), allowed_groups=ARMS), stamp_ns=10)
    pose.update(mapping.check(["vertical_move"], [0.1]), stamp_ns=20)
    assert pose.missing_groups() == ["base"]
    assert not pose.write(qpos)
    assert np.all(qpos == 7.0)
    pose.update(mapping.check(["base_x", "base_y", "base_yaw"], [1.0, 2.0, 0.5]), stamp_ns=30)
    assert pose.write(qpos)
    assert qpos[mapping.addresses["base_y"]] == 2.0
    assert qpos[mapping.addresses["left_gripper"]] == 1.0
    assert pose.stamp_ns == 30 and pose.oldest_stamp_ns() == 10


def test_rejected_message_leaves_last_valid_pose(mapping):
    pose = PoseState(mapping)
    pose.update(mapping.check(list(LEFT), np.full(7, 0.3), allowed_groups=ARMS), stamp_ns=1)
    with pytest.raises(JointStateError):
        pose.update(mapping.check(list(LEFT), np.r_[np.full(6, 0.9), np.nan], allowed_groups=ARMS), stamp_ns=2)
    assert pose.values()[LEFT[0]] == 0.3
    assert pose.stamp_ns == 1


def test_publisher_id_in_metadata_reveals_second_publisher():
    watch = PublisherWatch("joint_states")
    assert watch.observe(1, {"publisher": "sim"}) is None
    assert watch.observe(2, {"publisher": "sim"}) is None
    warning = watch.observe(3, {"publisher": "arms_hw"})
    assert warning and "arms_hw" in warning and "sim" in warning
    assert watch.observe(4, {"publisher": "arms_hw"}) is None  # reported once


def test_sequence_running_backwards_reveals_second_publisher():
    watch = PublisherWatch("lift")
    for seq in (1, 2, 3):
        assert watch.observe(seq, {"seq": seq}) is None
    assert "seq went from 3 to 1" in watch.observe(4, {"seq": 1})


def test_interleaved_stamps_reveal_second_publisher_but_one_clock_step_does_not():
    single = PublisherWatch("odom")
    for t in (100, 200, 150, 250, 300, 350):
        assert single.observe(t, {}) is None
    mixed = PublisherWatch("odom")
    warnings = [mixed.observe(t, {}) for t in (100, 50, 110, 60, 120, 70, 130)]
    assert any(w and "stamp_ns went back" in w for w in warnings)
