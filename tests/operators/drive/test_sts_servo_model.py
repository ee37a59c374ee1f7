import pytest

from teledora.operators.drive.sts_servo_model import POSITION_MODE, VELOCITY_MODE, SimulatedServo


def _run(servo, seconds, dt=0.001):
    for _ in range(int(seconds / dt)):
        servo.step(dt)


def test_velocity_mode_tracks_goal_and_wraps_readout():
    s = SimulatedServo(position_ticks=4000)
    s.mode, s.torque_enabled, s.goal_velocity = VELOCITY_MODE, True, 1000
    _run(s, 0.5)
    assert s.raw_velocity == pytest.approx(1000, abs=2)
    assert s.position_ticks > 4096 and s.raw_position == int(s.position_ticks) % 4096


def test_position_mode_converges():
    s = SimulatedServo(position_ticks=1000)
    s.mode, s.torque_enabled, s.goal_position = POSITION_MODE, True, 3000
    _run(s, 1.5)
    assert s.raw_position == pytest.approx(3000, abs=2)


def test_torque_off_does_not_move():
    s = SimulatedServo(position_ticks=1000)
    s.mode, s.goal_velocity = VELOCITY_MODE, 2000
    _run(s, 0.2)
    assert s.raw_position == 1000 and s.current_ma == 0.0


def test_hard_stop_stalls_with_high_current():
    s = SimulatedServo(position_ticks=1000, max_stop_ticks=1200)
    s.mode, s.torque_enabled, s.goal_velocity = VELOCITY_MODE, True, 1300
    _run(s, 0.5)
    assert s.position_ticks == 1200 and s.at_stop
    assert s.raw_current * 6.5 >= 300


def test_external_load_raises_current():
    s = SimulatedServo()
    s.torque_enabled = True
    s.load_current_ma = 2500
    s.step(0.01)
    assert s.current_ma > 2500
