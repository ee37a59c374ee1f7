"""No penetration: adversarial target sequences never push proxies into each other.

The full 1,000-sequence run is ``benchmarks/ik_collisions.py`` (minutes on two
cores); here a fixed-seed share of it keeps the suite fast.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

from teledora.operators.geometry import Pose
from teledora.operators.model.sides import SIDES

_BENCH = Path(__file__).resolve().parents[3] / "benchmarks" / "ik_collisions.py"
_spec = importlib.util.spec_from_file_location("ik_collisions_bench", _BENCH)
adversarial = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = adversarial
_spec.loader.exec_module(adversarial)


@pytest.fixture(scope="module")
def ik():
    return adversarial.make_ik(guard=True)


def test_adversarial_sequences_never_penetrate(ik):
    res = adversarial.run(ik, sequences=40, ticks=30, seed=11)
    assert res.failures == 0
    assert res.min_distance_m >= 0.0, f"penetration {res.min_distance_m * 1000:.2f} mm during {res.worst_attack}"


def test_the_guard_stops_what_the_qp_rows_let_through(ik):
    # on this sequence the QP's collision rows alone let the grips penetrate
    qp_only = adversarial.run(adversarial.make_ik(guard=False), sequences=1, ticks=30, seed=22)
    assert qp_only.min_distance_m < 0.0
    guarded = adversarial.run(ik, sequences=1, ticks=30, seed=22)
    assert guarded.min_distance_m >= 0.0


def test_grips_pushed_into_each_other_stop_near_the_minimum_distance(ik):
    home = np.array([ik.profile.home_q()[n] for n in ik.arm_joint_names])
    ik.reset(home, lift_joint=0.0)
    mid = 0.5 * (ik.grip_pose("left").position + ik.grip_pose("right").position)
    targets = {s: Pose.of(mid, ik.grip_pose(s).orientation) for s in SIDES}
    for _ in range(150):
        ik.tick(targets)
    d = ik.min_proxy_distance()
    assert 0.0 <= d < 0.02  # blocked by the constraint, not by reach


def test_guard_shortens_a_step_that_would_penetrate(ik):
    home = np.array([ik.profile.home_q()[n] for n in ik.arm_joint_names])
    ik.reset(home, lift_joint=0.0)
    guard = ik.settings.collision.guard_distance_m
    q_from = ik.arm_q()
    assert ik.min_proxy_distance() > guard  # the step starts clear of everything
    # swinging the left shoulder pan 1.5 rad inwards drives the left arm through the right one
    q_to = q_from.copy()
    q_to[ik.joint_index(["left_shoulder_pan"])] += 1.5
    ik._set_q(q_to)
    assert ik.min_proxy_distance() < 0.0  # unguarded, the step penetrates

    q, fraction, _ = ik._guard(q_from, q_to)

    # part of the step is kept (a guard that never moves fails here), along the step
    assert 0.0 < fraction < 1.0
    np.testing.assert_array_equal(q, q_from + fraction * (q_to - q_from))
    # the kept part ends clear of contact (a guard that lets the step through fails here)
    ik._set_q(q)
    assert ik.min_proxy_distance() >= guard
    # and it is no shorter than it must be: 1 % more of the step is already too close
    ik._set_q(q_from + (fraction + 0.01) * (q_to - q_from))
    assert ik.min_proxy_distance() < guard
