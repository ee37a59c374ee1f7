"""The lift guard: the lift, moved only as fast as the guard allows, never
carries anything it carries to within the clearance of what it does not carry,
measured by MuJoCo's signed distance on every such pair of the IK's model."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from teledora import models
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.lift_guard import LiftGuard

CLEARANCE = 0.008
DT = 0.01
MAX_SPEED = 0.08


@pytest.fixture(scope="module")
def rig():
    profile = models.load_profile()
    model = build_ik_model(models.path(profile.model), True)
    guard = LiftGuard(model, profile.lift_joint, CLEARANCE, horizon_s=0.25, latency_s=0.05)
    arm = [model.joint(j).qposadr[0] for side in ("left", "right") for j in profile.arms[side].joints]
    return model, guard, np.array(arm), mujoco.MjData(model)


def _closest(rig, q) -> float:
    model, guard, _, data = rig
    data.qpos[:] = q
    mujoco.mj_kinematics(model, data)
    return float(guard.pairs.distances(data, 1.0).min())  # every crossing pair, exactly, no broadphase


def _drive(rig, q, speed, seconds, guarded=True, lag_ticks=3):
    """Moves the lift at ``speed`` (bounded by the guard each tick, which sees
    the lift's height of ``lag_ticks`` ticks before: a lift state's age);
    returns the closest crossing distance seen, the final posture and the
    last speed used."""
    model, guard, _, _ = rig
    lo, hi = model.jnt_range[model.joint(models.load_profile().lift_joint).id]
    q = q.copy()
    heights = [q[guard.adr]] * (lag_ticks + 1)
    closest, used = _closest(rig, q), speed
    for _ in range(int(seconds / DT)):
        used = speed
        if guarded:
            seen = q.copy()
            seen[guard.adr] = heights[-1 - lag_ticks]
            b = guard.bounds(seen, MAX_SPEED)
            used = float(np.clip(speed, b.down, b.up))
        q[guard.adr] = np.clip(q[guard.adr] + used * DT, lo, hi)
        heights.append(q[guard.adr])
        closest = min(closest, _closest(rig, q))
    return closest, q, used


# a posture found by search: raising the lift 0.205 m from here drives an arm into the body
TRAPPED_ARMS = [-0.134, -1.045, 0.966, -1.443, -0.952, 1.154, -0.184, 1.42, 0.383, 1.091, -1.178, -0.692]
TRAPPED_LIFT = -0.074


def _posture(rig, arms, lift):
    model, guard, arm, _ = rig
    q = np.zeros(model.nq)
    q[arm] = arms
    q[guard.adr] = lift
    return q


def test_unguarded_the_lift_drives_the_arm_in_and_guarded_it_stops_short(rig):
    q = _posture(rig, TRAPPED_ARMS, TRAPPED_LIFT)
    assert _closest(rig, q) >= CLEARANCE
    unguarded, _, _ = _drive(rig, q, MAX_SPEED, 3.0, guarded=False)
    assert unguarded < 0  # the check has teeth: this motion penetrates
    guarded, q_end, last = _drive(rig, q, MAX_SPEED, 3.0)
    assert guarded >= CLEARANCE - 1e-9
    # it slowed against the pair (the room left shrinks with the horizon as its time constant), not at the end of travel
    assert abs(last) < 0.15 * MAX_SPEED and _closest(rig, q_end) < CLEARANCE + 0.01
    assert rig[1].bounds(q_end, MAX_SPEED).down == pytest.approx(-MAX_SPEED)  # and may still back away at full speed


def test_far_from_everything_the_lift_keeps_its_full_speed_both_ways(rig):
    profile = models.load_profile()
    model, guard, _, _ = rig
    q = np.zeros(model.nq)
    for name, value in profile.home_q().items():
        q[model.joint(name).qposadr[0]] = value
    q[guard.adr] = profile.lift_height_to_joint(0.3)
    b = guard.bounds(q, MAX_SPEED)
    assert (b.down, b.up) == (-MAX_SPEED, MAX_SPEED) and b.nearest == ""


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.filter_too_much])
@given(fractions=st.lists(st.floats(0.0, 1.0), min_size=12, max_size=12), lift=st.floats(0.0, 1.0),
       speeds=st.lists(st.floats(-MAX_SPEED, MAX_SPEED), min_size=1, max_size=4))
def test_a_guarded_lift_never_brings_a_pair_inside_the_clearance(rig, fractions, lift, speeds):
    model, guard, arm, _ = rig
    ranges = np.array([model.jnt_range[np.flatnonzero(model.jnt_qposadr == a)[0]] for a in arm])
    arms = ranges[:, 0] + np.asarray(fractions) * (ranges[:, 1] - ranges[:, 0])
    lift_range = model.jnt_range[model.joint(models.load_profile().lift_joint).id]
    q = _posture(rig, arms * 0.6, lift_range[0] + lift * (lift_range[1] - lift_range[0]))
    assume(_closest(rig, q) >= CLEARANCE)  # the IK keeps the arms so; the lift must not undo it
    for speed in speeds:  # the operator's or a policy's lift commands, each held for a second
        closest, q, _ = _drive(rig, q, speed, 1.0)
        assert closest >= CLEARANCE - 1e-9
