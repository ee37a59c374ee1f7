"""The one config reader: keys, kinds, nesting and the messages it gives."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pytest

from teledora.operators.config import ConfigError, config_from_mapping, describe_key, key_field, unit_of


@dataclass(frozen=True)
class Wheel:
    name: str = key_field()
    radius_m: float = 0.0

    def __post_init__(self) -> None:
        if self.radius_m < 0:
            raise ValueError("radius_m must be >= 0")


@dataclass(frozen=True)
class Limits:
    max_speed_m_s: float
    steps: int


@dataclass(frozen=True)
class Robot:
    label: str
    enabled: bool
    limits: Limits
    wheels: dict[str, Wheel]
    angles_deg: tuple[float, float, float]
    ids: tuple[int, ...]
    mode: Literal["fast", "slow"]
    offset_m: np.ndarray
    guard_m: float | None
    extra: dict[str, float] = field(default_factory=dict)


GOOD = {
    "label": "am2", "enabled": True, "limits": {"max_speed_m_s": 1, "steps": 3},
    "wheels": {"left": {"radius_m": 0.06}, "right": {"radius_m": 0.06}},
    "angles_deg": [150, -90, 30], "ids": [8, 9, 10], "mode": "slow", "offset_m": [0.1, 0.2], "guard_m": None,
}


def test_a_good_mapping_becomes_the_dataclass() -> None:
    robot = config_from_mapping(Robot, GOOD)
    assert robot.limits == Limits(1.0, 3) and isinstance(robot.limits.max_speed_m_s, float)
    assert robot.wheels["left"] == Wheel("left", 0.06)
    assert robot.angles_deg == (150.0, -90.0, 30.0) and robot.ids == (8, 9, 10)
    assert robot.offset_m.tolist() == [0.1, 0.2] and robot.guard_m is None and robot.extra == {}


def test_left_out_defaults_are_reported() -> None:
    defaulted: list[str] = []
    config_from_mapping(Robot, {**GOOD, "wheels": {"left": {}}}, defaulted=defaulted)
    assert defaulted == ["wheels.left.radius_m", "extra"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": "red"}, r"top level: unknown keys \['colour'\]"),
        ({"limits": {"steps": 3}}, r"limits: missing key max_speed_m_s \(m/s\)"),
        ({"limits": {"max_speed_m_s": "fast", "steps": 3}}, r"limits.max_speed_m_s \(m/s\): expected a finite number"),
        ({"limits": {"max_speed_m_s": float("nan"), "steps": 3}}, r"expected a finite number"),
        ({"limits": {"max_speed_m_s": True, "steps": 3}}, r"expected a finite number"),
        ({"limits": {"max_speed_m_s": 1.0, "steps": 2.5}}, r"limits.steps: expected a whole number"),
        ({"enabled": "yes"}, r"enabled: expected true or false"),
        ({"angles_deg": [1, 2]}, r"angles_deg \(deg\): expected 3 values"),
        ({"ids": [8, "nine"]}, r"ids\[1\]: expected a whole number"),
        ({"mode": "medium"}, r"mode: must be one of \['fast', 'slow'\]"),
        ({"wheels": {"left": {"radius_m": -1}}}, r"wheels.left: radius_m must be >= 0"),
        ({"limits": [1, 2]}, r"limits: expected a mapping"),
        ({"offset_m": [0.0, float("inf")]}, r"offset_m \(m\): expected finite numbers"),
    ],
)
def test_errors_name_the_key_and_its_unit(change, message) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_mapping(Robot, {**GOOD, **change})


def test_a_subsystem_error_class_is_raised() -> None:
    class DriveError(ValueError):
        pass

    with pytest.raises(DriveError, match="unknown"):
        config_from_mapping(Limits, {"max_speed_m_s": 1, "steps": 1, "x": 0}, "lift", DriveError)


def test_units_come_from_the_key_suffix() -> None:
    assert unit_of("max_speed_m_s") == "m/s" and unit_of("accel_noise_m_s2") == "m/s²"
    assert unit_of("odom_max_age_s") == "s" and unit_of("render_rate_hz") == "Hz" and unit_of("bins") is None
    assert describe_key("lift.soft_max_mm") == "lift.soft_max_mm (mm)"
