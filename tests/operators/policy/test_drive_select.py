"""Whose commands go on (operators/policy/drive_select.py): the policy's held to
the operator's caps, a stop holds the arms and zeroes base and lift."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, strategies as st

from teledora.operators.policy.authority import OPERATOR, POLICY, STOPPED, Decision
from teledora.operators.policy.drive_select import DriveCaps, PolicyCommands, capped_base, capped_lift, select

CAPS = DriveCaps(max_speed_m_s=0.25, max_yaw_rate_rad_s=0.65, max_lift_speed_m_s=0.08)
speeds = st.floats(-50, 50, allow_nan=False)


def arm(x: float, enabled: bool = True) -> dict:
    return dict(enabled=enabled, position=np.array([x, 0.1, 0.5]), orientation=np.array([0, 0, 0, 1.0]), gripper=0.1, slow=False)


def targets(x: float) -> dict:
    return dict(stamp_ns=1, frame_id="base_link", left=arm(x), right=arm(-x))


SCHEME = (targets(0.3), dict(stamp_ns=1, forward_m_s=0.2, left_m_s=0.0, yaw_rad_s=0.3), dict(stamp_ns=1, velocity_m_s=0.05))


def policy_with(stamps=(10, 20, 30)) -> PolicyCommands:
    p = PolicyCommands()
    p.on_command("arm_targets", dict(targets(0.4), stamp_ns=stamps[0]))
    p.on_command("base_cmd", dict(stamp_ns=stamps[1], forward_m_s=3.0, left_m_s=4.0, yaw_rad_s=-2.0))
    p.on_command("lift_cmd", dict(stamp_ns=stamps[2], velocity_m_s=1.0))
    return p


@given(speeds, speeds, speeds, speeds)
def test_capped_commands_stay_within_the_caps_and_keep_their_direction(fwd, left, yaw, lift):
    b = capped_base(dict(stamp_ns=5, forward_m_s=fwd, left_m_s=left, yaw_rad_s=yaw), CAPS)
    assert math.hypot(b["forward_m_s"], b["left_m_s"]) <= CAPS.max_speed_m_s * (1 + 1e-12)
    assert abs(b["yaw_rad_s"]) <= CAPS.max_yaw_rate_rad_s
    assert b["forward_m_s"] * fwd >= 0 and b["left_m_s"] * left >= 0
    if math.hypot(fwd, left) <= CAPS.max_speed_m_s:
        assert (b["forward_m_s"], b["left_m_s"]) == (fwd, left)
    assert abs(capped_lift(dict(stamp_ns=5, velocity_m_s=lift), CAPS)["velocity_m_s"]) <= CAPS.max_lift_speed_m_s


def test_the_selector_is_told_the_oldest_of_the_three_newest_once_per_news():
    p = PolicyCommands()
    p.on_command("arm_targets", targets(0.4))
    assert p.take_stamp() is None  # base and lift not known yet
    p = policy_with((10, 20, 30))
    assert p.take_stamp() == 10
    assert p.take_stamp() is None  # nothing new since
    p.on_command("arm_targets", dict(targets(0.4), stamp_ns=40))
    assert p.take_stamp() == 20


def test_operator_policy_and_stopped_commands():
    p = policy_with()
    op = select(Decision(OPERATOR, OPERATOR, ""), *SCHEME, p, CAPS, 99)
    assert op.arm_targets["left"]["position"][0] == 0.3 and op.base_cmd["forward_m_s"] == 0.2
    pol = select(Decision(POLICY, POLICY, ""), *SCHEME, p, CAPS, 99)
    assert pol.arm_targets["left"]["position"][0] == 0.4
    assert math.hypot(pol.base_cmd["forward_m_s"], pol.base_cmd["left_m_s"]) == CAPS.max_speed_m_s
    assert pol.base_cmd["yaw_rad_s"] == -CAPS.max_yaw_rate_rad_s and pol.lift_cmd["velocity_m_s"] == CAPS.max_lift_speed_m_s
    stop = select(Decision(STOPPED, POLICY, "stale"), *SCHEME, p, CAPS, 99)
    assert not stop.arm_targets["left"]["enabled"] and not stop.arm_targets["right"]["enabled"]
    np.testing.assert_array_equal(stop.arm_targets["left"]["position"], SCHEME[0]["left"]["position"])  # held where the scheme holds
    assert stop.base_cmd == dict(stamp_ns=99, forward_m_s=0.0, left_m_s=0.0, yaw_rad_s=0.0)
    assert stop.lift_cmd == dict(stamp_ns=99, velocity_m_s=0.0)
