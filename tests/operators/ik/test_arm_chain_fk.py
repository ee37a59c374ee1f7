"""The batched arm forward kinematics agrees with MuJoCo's own, sample by sample."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.operators.ik.arm_chain_fk import ArmChainError, ArmChainFk
from teledora.operators.ik.ik_config import IkConfig
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.model.sides import SIDES

PROFILE = models.load_profile()
SETTINGS = IkConfig.from_mapping(models.load_yaml("alohamini2/ik.yaml")).settings
MODEL = build_ik_model(models.path(SETTINGS.solver.model), SETTINGS.solver.add_floor)


@pytest.mark.parametrize("side", SIDES)
def test_grip_poses_match_mujoco_for_random_joints_lift_and_base(side: str) -> None:
    arm = PROFILE.arms[side]
    fk = ArmChainFk(MODEL, arm.joints, arm.grip_site)
    ids = [MODEL.joint(j).id for j in arm.joints]
    adr = [MODEL.jnt_qposadr[j] for j in ids]
    lower, upper = MODEL.jnt_range[ids, 0], MODEL.jnt_range[ids, 1]
    rng = np.random.default_rng(7)
    data, check = mujoco.MjData(MODEL), mujoco.MjData(MODEL)
    for _ in range(5):  # the rest of the robot (base pose, lift, the other arm) moved each round
        data.qpos[:] = rng.uniform(-0.4, 0.4, MODEL.nq)
        data.qpos[MODEL.jnt_qposadr[MODEL.joint("vertical_move").id]] = rng.uniform(0.0, 0.3)
        mujoco.mj_kinematics(MODEL, data)
        samples = rng.uniform(lower, upper, size=(100, len(ids)))
        pos, rot = fk.poses(data, samples)
        assert pos.shape == (100, 3) and rot.shape == (100, 3, 3)
        check.qpos[:] = data.qpos
        for k in range(len(samples)):
            check.qpos[adr] = samples[k]
            mujoco.mj_kinematics(MODEL, check)
            np.testing.assert_allclose(pos[k], check.site_xpos[fk.site_id], rtol=0, atol=1e-12)
            np.testing.assert_allclose(rot[k], check.site_xmat[fk.site_id].reshape(3, 3), rtol=0, atol=1e-12)


def test_the_joint_order_is_the_sample_columns_order() -> None:
    arm = PROFILE.arms["left"]
    forward = ArmChainFk(MODEL, arm.joints, arm.grip_site)
    backward = ArmChainFk(MODEL, tuple(reversed(arm.joints)), arm.grip_site)
    data = mujoco.MjData(MODEL)
    mujoco.mj_kinematics(MODEL, data)
    q = np.linspace(-0.5, 0.6, len(arm.joints))
    np.testing.assert_allclose(forward.poses(data, q)[0], backward.poses(data, q[::-1])[0], atol=1e-12)


def test_joints_off_the_chain_or_not_hinges_are_refused() -> None:
    left, right = PROFILE.arms["left"], PROFILE.arms["right"]
    with pytest.raises(ArmChainError, match="not on the chain"):
        ArmChainFk(MODEL, (*left.joints, right.joints[0]), left.grip_site)
    with pytest.raises(ArmChainError, match="not a hinge"):
        ArmChainFk(MODEL, ("vertical_move", *left.joints), left.grip_site)
