"""Any action a policy could emit, through the policy node's action mapping and
the IK: the quick mode of ``benchmarks/policy_adversarial.py`` (random, far,
colliding and extreme actions, base and lift at and over their caps) keeps
every geom pair MuJoCo's collision filter allows apart and every cap, and
rejects every extreme action.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, strategies as st

from teledora import models

_BENCH = Path(__file__).resolve().parents[3] / "benchmarks"
sys.path.insert(0, str(_BENCH))
_spec = importlib.util.spec_from_file_location("policy_adversarial_bench", _BENCH / "policy_adversarial.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = bench
_spec.loader.exec_module(bench)


@pytest.fixture(scope="module")
def quick():
    return bench.run(bench.QUICK_S, seed=3)


def test_adversarial_actions_cause_no_penetration_and_break_no_cap(quick):
    c = quick.check
    assert c.solves >= quick.ticks * 0.9  # checked on (nearly) every 10 ms tick
    assert c.penetrations == 0, f"{c.min_distance_m * 1000:.3f} mm at {c.worst_pair} ({c.worst_attack})"
    assert c.min_distance_m >= 0.0
    assert quick.violations() == {"joint speed": 0, "joint acceleration": 0, "joint jerk": 0,
                                  "base linear speed": 0, "base yaw rate": 0, "lift speed": 0}, c.cap_peaks
    assert quick.failed_solves == 0


def test_the_adversary_drives_the_arms_base_and_lift_at_their_caps(quick):
    c = quick.check
    profile = models.load_profile()
    # the actions reach the joint caps and the command caps, so a bound that
    # did not hold would have shown
    assert c.cap_peaks["speed"] > 0.9 * quick.joint_caps.max_speed_rad_s
    for name, cap in (("base linear speed", profile.base.max_linear_m_s), ("base yaw rate", profile.base.max_yaw_rad_s),
                      ("lift speed", profile.lift.max_speed_m_s)):
        assert quick.command_peaks[name] == pytest.approx(cap)
    # and they press parts together: the closest approach is near the clearance
    assert c.min_distance_m < 0.012


def test_every_extreme_action_is_rejected_and_counted_and_no_other(quick):
    assert quick.extreme_accepted == 0
    assert quick.sane_rejected == 0
    assert set(quick.rejected_by) == {"absurd value", "not finite", "wrong length"}
    assert quick.rejected > 0.05 * quick.actions
    assert quick.clamped_actions > 0
    assert {"lift height", "linear speed", "yaw_rad_s"} <= set(quick.clamped_by)


@given(st.integers(0, 2**32 - 1))
def test_every_behaviour_comes_round_early_and_every_combination_in_each_round(seed):
    arms, base_lift = len(bench.ARM_MODES), len(bench.BASE_LIFT_MODES)
    combos = arms * base_lift
    modes = bench.segment_modes(np.random.default_rng(seed), 2 * combos)
    for k in range(2):
        one_round = modes[k * combos:(k + 1) * combos]
        assert set(one_round) == {(a, b) for a in bench.ARM_MODES for b in bench.BASE_LIFT_MODES}
        assert {a for a, _ in one_round[:arms]} == set(bench.ARM_MODES)
        assert {b for _, b in one_round[:base_lift]} == set(bench.BASE_LIFT_MODES)
    # the quick mode's segments meet every behaviour
    quick = modes[:int(bench.QUICK_S / bench.SEGMENT_S)]
    assert {a for a, _ in quick} == set(bench.ARM_MODES) and {b for _, b in quick} == set(bench.BASE_LIFT_MODES)
