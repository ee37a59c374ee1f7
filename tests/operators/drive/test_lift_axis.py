from dataclasses import replace

import pytest

from teledora.operators.drive.lift_axis import (
    HomingPhase,
    LiftAxis,
    LiftAxisConfig,
    LiftConfigError,
    LiftHoming,
    LiftNotHomedError,
    MultiTurnCounter,
)
from teledora.models.config_files import load_drive_config
from teledora.operators.drive.sts_servo_model import VELOCITY_MODE, SimulatedServo

CFG = load_drive_config().lift
TICKS_PER_MM = 4096 / 131.0


def test_unwrap_counts_across_the_12_bit_wrap():
    c = MultiTurnCounter(4096, 4000)
    assert c.update(4090) == 90
    assert c.update(100) == 90 + 106  # 4090 -> 100 wrapped forward
    assert c.update(4000) == 196 - 196  # and back
    assert c.update(1952) == -2048  # exactly half a turn is not a wrap


def test_height_uses_direction_sign_and_lead():
    axis = LiftAxis(CFG, 1000)
    axis.set_zero(1000)
    # servo ticks decreasing (negative servo direction) = lift going up
    h = axis.update(1000 - 4096 // 4)
    assert h == pytest.approx(131.0 / 4, rel=1e-12)


def _homed_axis(height_mm: float) -> LiftAxis:
    axis = LiftAxis(CFG, 2000)
    axis.set_zero(2000)
    target = 2000 - height_mm * TICKS_PER_MM
    pos = 2000.0
    while abs(target - pos) > 1e-9:  # move in sub-half-turn steps, as polls would see it
        pos += max(-1000.0, min(1000.0, target - pos))
        axis.update(int(round(pos)) % 4096)
    return axis


def test_velocity_goal_clamps_signs_and_truncates():
    axis = _homed_axis(300)
    assert axis.velocity_goal_raw(0.01) == -int(0.01 * 1000 * TICKS_PER_MM)  # up = negative servo velocity
    assert axis.velocity_goal_raw(1.0) == -1300
    assert axis.velocity_goal_raw(-1.0) == 1300
    assert axis.velocity_goal_raw(0.0) == 0


def test_floor_guard_and_soft_limits():
    low = _homed_axis(4.0)
    assert low.velocity_goal_raw(-0.02) == 0  # no descent at or below 5 mm
    assert low.velocity_goal_raw(0.02) < 0  # up is still allowed
    top = _homed_axis(600.5)
    assert top.velocity_goal_raw(0.02) == 0
    assert top.velocity_goal_raw(-0.02) > 0


def test_height_target_proportional_with_deadband():
    axis = _homed_axis(100)
    h = axis.height_mm
    assert axis.height_goal_raw(h + 0.9) == 0
    assert axis.height_goal_raw(h + 2.0) == -600
    assert axis.height_goal_raw(h + 50) == -1300
    assert axis.height_goal_raw(h - 50) == 1300
    assert _homed_axis(3.0).height_goal_raw(0.0) == 0  # floor guard on targets too


def test_commands_refused_before_homing():
    axis = LiftAxis(CFG, 0)
    with pytest.raises(LiftNotHomedError):
        axis.velocity_goal_raw(0.01)


def test_config_validation():
    with pytest.raises(LiftConfigError):
        replace(CFG, dir_sign=2)
    with pytest.raises(LiftConfigError, match="unknown"):
        LiftAxisConfig.from_dict({"lead_mm": 1})


def _run_homing(servo: SimulatedServo, axis: LiftAxis, homing: LiftHoming, max_polls=2000):
    dt_ns = int(CFG.home_poll_period_s * 1e9)
    now = 0
    act = homing.start(servo.raw_position)
    servo.goal_velocity, servo.torque_enabled = act.goal_velocity_raw, act.torque_enable
    for _ in range(max_polls):
        for _ in range(10):
            servo.step(CFG.home_poll_period_s / 10)
        now += dt_ns
        act = homing.poll(servo.raw_position, servo.raw_current, now)
        if act.goal_velocity_raw is not None:
            servo.goal_velocity = act.goal_velocity_raw
        if act.torque_enable is not None:
            servo.torque_enabled = act.torque_enable
        if act.phase in (HomingPhase.DONE, HomingPhase.FAILED):
            return act, now
    raise AssertionError("homing did not finish")


def test_homing_finds_the_floor_and_zeroes():
    floor = 30000.0
    start_mm = 40.0
    servo = SimulatedServo(position_ticks=floor - start_mm * TICKS_PER_MM, max_stop_ticks=floor)
    servo.mode = VELOCITY_MODE
    axis = LiftAxis(CFG, servo.raw_position)
    homing = LiftHoming(axis)
    act, now = _run_homing(servo, axis, homing)
    assert act.phase is HomingPhase.DONE and axis.homed
    assert act.torque_enable is True and act.goal_velocity_raw == 0
    assert servo.position_ticks == floor
    assert axis.height_mm == 0.0
    # descent took about start_mm / (1300 ticks/s) plus the 1 s settle
    assert now / 1e9 == pytest.approx(start_mm * TICKS_PER_MM / 1300 + 1.0, abs=0.3)
    # after zeroing, moving up 10 mm reads +10 mm
    assert axis.update(int(floor - 10 * TICKS_PER_MM) % 4096) == pytest.approx(10.0, abs=0.05)


def test_homing_stall_by_current_alone():
    servo = SimulatedServo(position_ticks=0.0)
    servo.mode = VELOCITY_MODE
    axis = LiftAxis(CFG, servo.raw_position)
    homing = LiftHoming(axis)
    homing.start(servo.raw_position)
    homing.poll(500, 10, 0)  # moved, low current: not stalled
    assert homing.stalled == 0
    homing.poll(1000, 400 // 6.5 + 1, 1)  # moved but over 300 mA
    assert homing.stalled == 1
    act = homing.poll(1500, 60, 2)
    assert act.phase is HomingPhase.SETTLING and act.torque_enable is False


def test_homing_fails_without_a_floor():
    cfg = replace(CFG, home_max_polls=20)
    servo = SimulatedServo(position_ticks=0.0)
    servo.mode = VELOCITY_MODE
    axis = LiftAxis(cfg, 0)
    homing = LiftHoming(axis)
    homing.start(0)
    pos = 0
    for k in range(20):
        pos = (pos + 65) % 4096
        act = homing.poll(pos, 10, k)
    assert act.phase is HomingPhase.FAILED and not axis.homed and "20 polls" in homing.failure
