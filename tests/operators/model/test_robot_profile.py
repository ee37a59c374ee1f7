"""Robot profile: the command limits section is read and checked."""

from __future__ import annotations

import copy

import pytest

from teledora import models
from teledora.operators.model.robot_profile import ProfileError, profile_from_dict

DATA = models.load_yaml("alohamini2/profile.yaml")


def test_command_limits_are_read() -> None:
    c = profile_from_dict(DATA).command_limits
    assert (c.reject_factor, c.joint_reject_margin_rad, c.arm_max_speed_rad_s) == (10.0, 6.283, 3.0)


@pytest.mark.parametrize(("key", "value", "match"), [
    ("reject_factor", 1.0, "reject_factor must be finite and > 1"),
    ("reject_factor", float("inf"), "reject_factor"),
    ("joint_reject_margin_rad", 0.0, "joint_reject_margin_rad must be finite and > 0"),
    ("arm_max_speed_rad_s", float("nan"), "arm_max_speed_rad_s"),
    ("arm_max_speed_rad", 3.0, "unknown keys \\['arm_max_speed_rad'\\]"),
])
def test_bad_command_limits_name_the_key(key: str, value: float, match: str) -> None:
    data = copy.deepcopy(DATA)
    data["command_limits"][key] = value
    with pytest.raises(ProfileError, match=match):
        profile_from_dict(data)


def test_missing_command_limits_is_refused() -> None:
    data = copy.deepcopy(DATA)
    del data["command_limits"]
    with pytest.raises(ProfileError, match="command_limits"):
        profile_from_dict(data)
