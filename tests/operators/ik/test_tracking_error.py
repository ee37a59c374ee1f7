"""Settled-target tracking error: the masks and associations it rests on."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.operators.ik.grip_kinematics import GripKinematics
from teledora.operators.contract.messages import MessageError
from teledora.operators.ik.tracking_error import nearest_indices, settled_mask, summarize

S = 1_000_000_000


def test_a_target_counts_as_settled_only_after_a_full_still_hold() -> None:
    t = np.arange(0, 40) * S // 10  # 10 Hz for 4 s
    p = np.zeros((40, 3))
    p[:10, 0] = np.linspace(0, 0.1, 10)  # moving during the first second
    p[10:, 0] = 0.1
    mask = settled_mask(t, p, hold_s=1.0)
    assert not mask[:20].any()  # still for < 1 s before index 20
    assert mask[20:].all()


def test_small_jitter_is_still_but_a_step_is_not() -> None:
    t = np.arange(0, 30) * S // 10
    p = np.zeros((30, 3))
    p[:, 1] = 5e-5 * (-1) ** np.arange(30)  # 0.1 mm peak to peak jitter
    assert settled_mask(t, p, 1.0, still_tol_m=1e-4)[15:].all()
    p[25, 1] = 0.01
    assert not settled_mask(t, p, 1.0)[25]


def test_nearest_indices_and_summary() -> None:
    stamps = np.array([0, 10, 20, 30])
    np.testing.assert_array_equal(nearest_indices([-5, 4, 6, 29, 100], stamps), [0, 0, 1, 3, 3])
    s = summarize([0.001, 0.002, 0.003, 0.004])
    assert s.samples == 4 and s.max_m == 0.004 and s.median_m == pytest.approx(0.0025)
    with pytest.raises(ValueError):
        summarize([])


def test_grip_kinematics_matches_the_model_and_needs_every_joint() -> None:
    profile = models.load_profile()
    model = mujoco.MjModel.from_xml_path(str(models.path(profile.model)))
    kin = GripKinematics(model, profile)
    home = profile.home_q()
    names = list(reversed(list(home)))  # order must not matter
    grips = kin.grips(names, [home[n] for n in names], lift_height_m=0.3)
    data = mujoco.MjData(model)
    for j, v in home.items():
        data.joint(j).qpos = v
    mujoco.mj_kinematics(model, data)
    np.testing.assert_allclose(grips["left"][0], data.site("left_grip").xpos, atol=1e-12)  # lift 0.3 m = joint 0
    grips_low = kin.grips(names, [home[n] for n in names], lift_height_m=0.0)
    assert grips_low["left"][0][2] == pytest.approx(grips["left"][0][2] - 0.3)
    with pytest.raises(MessageError, match="missing"):
        kin.grips(names[:-1], [0.0] * 13, 0.0)
