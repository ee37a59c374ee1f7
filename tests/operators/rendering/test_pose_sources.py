"""Pose sources: which input sets each joint group of the rendered robot, the
values a decoded state message gives, and second sources ignored and reported."""

from __future__ import annotations

import dataclasses
import math

import mujoco
import pytest

from teledora import models
from teledora.operators.rendering.camera_intrinsics import renderer_config_from_dict
from teledora.operators.model.joint_state_mapping import JointStateError, JointStateMapping, qpos_addresses
from teledora.operators.contract.messages import decode, encode
from teledora.operators.rendering.pose_sources import PoseSources, joint_groups

PROFILE = models.load_profile()
CONFIG = renderer_config_from_dict(models.load_yaml("alohamini2/renderer.yaml"))
GROUND_TRUTH_ONLY = {"arms": "ground_truth", "lift": "ground_truth", "base": "ground_truth"}


@pytest.fixture(scope="module")
def addresses() -> dict[str, int]:
    return qpos_addresses(mujoco.MjModel.from_xml_path(str(models.path(CONFIG.model.path))))


def sources_for(addresses, config=CONFIG) -> tuple[PoseSources, list[str]]:
    warnings: list[str] = []
    mapping = JointStateMapping(addresses, joint_groups(PROFILE, config))
    return PoseSources(mapping, config, PROFILE.lift_height_to_joint, warnings.append), warnings


def joint_state(q: dict[str, float]) -> dict:
    msg = {"stamp_ns": 1, "names": list(q), "position": list(q.values()), "velocity": [], "effort": []}
    return decode("JointState", encode("JointState", msg))


def ground_truth(q: dict[str, float], x=0.0, y=0.0, yaw=0.0, lift_height_m=0.3) -> dict:
    msg = {"stamp_ns": 1, "frame_id": "world", "x": x, "y": y, "yaw": yaw, "vx": 0.0, "vy": 0.0, "wz": 0.0,
           "lift_height_m": lift_height_m, "joint_names": list(q), "joint_position": list(q.values()),
           "joint_velocity": [0.0] * len(q)}
    return decode("GroundTruth", encode("GroundTruth", msg))


def test_groups_are_the_two_arms_lift_and_base_of_the_config():
    groups = {g.name: g.joints for g in joint_groups(PROFILE, CONFIG)}
    assert list(groups) == ["left_arm", "right_arm", "lift", "base"]
    assert groups["left_arm"] == PROFILE.arms["left"].all_joints
    assert groups["lift"] == (CONFIG.model.lift_joint,)
    assert groups["base"] == tuple(CONFIG.model.base_joints)


def test_joint_states_set_only_the_arms_they_carry(addresses):
    sources, warnings = sources_for(addresses)
    q = PROFILE.home_q()
    right = {n: q[n] + 0.1 for n in PROFILE.arms["right"].all_joints}
    groups = sources.groups_from("joint_states", joint_state(right))
    assert list(groups) == ["right_arm"]
    assert groups["right_arm"] == pytest.approx(right)
    with pytest.raises(JointStateError, match="unknown joint names"):  # the lift is not an arm joint
        sources.groups_from("joint_states", joint_state({**right, CONFIG.model.lift_joint: 0.0}))
    assert warnings == []


def test_lift_height_becomes_the_lift_joint_position(addresses):
    sources, _ = sources_for(addresses)
    msg = decode("LiftState", encode("LiftState", {"stamp_ns": 1, "height_m": 0.42, "velocity_m_s": 0.0, "homed": True}))
    groups = sources.groups_from("lift", msg)
    assert groups == {"lift": {CONFIG.model.lift_joint: pytest.approx(PROFILE.lift_height_to_joint(0.42))}}


def test_odometry_sets_the_base_with_the_configured_yaw_offset(addresses):
    config = dataclasses.replace(CONFIG, model=dataclasses.replace(CONFIG.model, base_yaw_offset_rad=math.pi / 2))
    sources, _ = sources_for(addresses, config)
    msg = {"x": 1.5, "y": -0.25, "yaw": 0.3}
    x, y, yaw = config.model.base_joints
    assert sources.groups_from("odom", msg) == {"base": {x: 1.5, y: -0.25, yaw: pytest.approx(0.3 + math.pi / 2)}}


def test_non_finite_odometry_is_rejected(addresses):
    sources, _ = sources_for(addresses)
    with pytest.raises(JointStateError, match="non-finite"):
        sources.groups_from("odom", {"x": float("nan"), "y": 0.0, "yaw": 0.0})


def test_ground_truth_alone_sets_every_group(addresses):
    sources, warnings = sources_for(addresses, dataclasses.replace(CONFIG, sources=GROUND_TRUTH_ONLY))
    q = PROFILE.home_q()
    groups = sources.groups_from("ground_truth", ground_truth(q, x=2.0, yaw=0.5, lift_height_m=0.1))
    assert list(groups) == ["left_arm", "right_arm", "lift", "base"]
    assert {**groups["left_arm"], **groups["right_arm"]} == pytest.approx(q)
    assert groups["lift"] == {CONFIG.model.lift_joint: pytest.approx(PROFILE.lift_height_to_joint(0.1))}
    assert list(groups["base"].values()) == pytest.approx([2.0, 0.0, 0.5])
    assert warnings == []


def test_ground_truth_arms_ignore_its_other_model_joints(addresses):
    """Ground truth may list every model joint; the lift joint among them does
    not override the lift height, and the arms keep only their own joints."""
    sources, _ = sources_for(addresses, dataclasses.replace(CONFIG, sources=GROUND_TRUTH_ONLY))
    q = {**PROFILE.home_q(), CONFIG.model.lift_joint: -5.0}
    groups = sources.groups_from("ground_truth", ground_truth(q, lift_height_m=0.3))
    assert CONFIG.model.lift_joint not in {**groups["left_arm"], **groups["right_arm"]}
    assert groups["lift"][CONFIG.model.lift_joint] == pytest.approx(PROFILE.lift_height_to_joint(0.3))


def test_ground_truth_with_a_joint_the_model_lacks_is_rejected(addresses):
    sources, _ = sources_for(addresses, dataclasses.replace(CONFIG, sources=GROUND_TRUTH_ONLY))
    with pytest.raises(JointStateError, match=r"unknown joint names \['no_such_joint'\]"):
        sources.groups_from("ground_truth", ground_truth({**PROFILE.home_q(), "no_such_joint": 0.0}))


def test_a_second_source_is_ignored_and_reported_once_per_group(addresses):
    sources, warnings = sources_for(addresses)  # shipped config: the robot's own topics
    assert sources.groups_from("ground_truth", ground_truth(PROFILE.home_q())) == {}
    assert sources.groups_from("ground_truth", ground_truth(PROFILE.home_q())) == {}
    assert warnings == [
        "arms state arrives on 'ground_truth' too; using 'joint_states' (sources.arms)",
        "lift state arrives on 'ground_truth' too; using 'lift' (sources.lift)",
        "base state arrives on 'ground_truth' too; using 'odom' (sources.base)",
    ]


def test_own_topics_are_ignored_when_ground_truth_is_the_source(addresses):
    sources, warnings = sources_for(addresses, dataclasses.replace(CONFIG, sources={**CONFIG.sources, "arms": "ground_truth"}))
    assert sources.groups_from("joint_states", joint_state(PROFILE.home_q())) == {}
    assert warnings == ["arms state arrives on 'joint_states' too; using 'ground_truth' (sources.arms)"]
    # the other groups still follow their own topics
    expected = {"lift": {CONFIG.model.lift_joint: pytest.approx(PROFILE.lift_height_to_joint(0.2))}}
    assert sources.groups_from("lift", {"height_m": 0.2}) == expected
