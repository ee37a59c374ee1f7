import pytest

from teledora.operators.drive.current_protection import (
    CurrentHoldLimiter,
    CurrentProtectionConfig,
    CurrentProtectionConfigError,
    OvercurrentTrip,
)


def test_joint_freezes_at_limit_and_releases_when_goal_retreats():
    lim = CurrentHoldLimiter(1800.0, release_margin=0.0175)
    # driven positive into an obstacle
    assert lim.limit({"j": 0.5}, {"j": 0.3}, {"j": 1000.0}) == {"j": 0.5}
    assert lim.limit({"j": 0.5}, {"j": 0.3}, {"j": 1800.0}) == {"j": 0.3}
    # current drops while holding: still held, even if the goal pushes further
    assert lim.limit({"j": 0.7}, {"j": 0.3}, {"j": 10.0}) == {"j": 0.3}
    # goal back but within margin: held
    assert lim.limit({"j": 0.29}, {"j": 0.3}, {"j": 10.0}) == {"j": 0.3}
    # goal back past the margin: released
    assert lim.limit({"j": 0.2}, {"j": 0.3}, {"j": 10.0}) == {"j": 0.2}
    assert "j" not in lim.holds


def test_gripper_holds_a_step_into_the_grasp_and_clamps():
    # closure angle grows when closing; opening = negative direction
    lim = CurrentHoldLimiter(500.0, 0.0175, hold_close_step=0.02, open_direction={"g": -1.0}, limits={"g": (0.0, 0.7)})
    out = lim.limit({"g": 0.7}, {"g": 0.4}, {"g": 650.0})
    assert out["g"] == pytest.approx(0.42)
    assert lim.limit({"g": 0.7}, {"g": 0.69}, {"g": 650.0})["g"] == pytest.approx(0.42)  # hold is sticky
    assert lim.limit({"g": 0.3}, {"g": 0.42}, {"g": 100.0})["g"] == 0.3  # opening releases
    lim2 = CurrentHoldLimiter(500.0, 0.0175, hold_close_step=0.02, open_direction={"g": -1.0}, limits={"g": (0.0, 0.7)})
    assert lim2.limit({"g": 0.7}, {"g": 0.695}, {"g": 600.0})["g"] == 0.7  # clamped to range


def test_untracked_joints_pass_through():
    lim = CurrentHoldLimiter(100.0, 0.01)
    assert lim.limit({"a": 1.0}, {}, {}) == {"a": 1.0}


def test_trip_needs_consecutive_reads():
    trip = OvercurrentTrip(2000.0, 20)
    for _ in range(19):
        assert trip.update({"a": 2100.0, "b": 100.0}) is None
    assert trip.update({"a": 1999.0}) is None  # a dip resets the count
    for _ in range(19):
        assert trip.update({"a": 2001.0}) is None
    t = trip.update({"a": 2001.0})
    assert t is not None and t.name == "a" and t.consecutive_reads == 20


def test_config_rejects_unknown_keys():
    with pytest.raises(CurrentProtectionConfigError):
        CurrentProtectionConfig.from_dict({"trip_amps": 2})
