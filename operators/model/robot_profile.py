"""The robot profile: joint groups, sites, frames and limits as a typed object.

Built from the mapping in ``models/<robot>/profile.yaml`` (``teledora.models``
reads the file; this module only interprets the data)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.contract.message_limits import MessageLimitsSettings
from teledora.operators.errors import ConfigError
from teledora.operators.model.sides import SIDES
from teledora.operators.config import config_from_mapping, key_field


class ProfileError(ConfigError):
    """The robot profile is missing a key or holds an inconsistent value."""


@dataclass(frozen=True)
class ArmProfile:
    """One arm: its six joints, gripper joint and grip site, by name."""

    side: str = key_field()
    joints: tuple[str, ...]
    gripper: str
    grip_site: str

    def __post_init__(self) -> None:
        if len(self.joints) != 6:
            raise ProfileError(f"joints: expected 6 joints, got {len(self.joints)}")

    @property
    def all_joints(self) -> tuple[str, ...]:
        return self.joints + (self.gripper,)


@dataclass(frozen=True)
class LiftProfile:
    """The lift: driver travel, where the model's joint puts height 0, the teleop speed cap."""

    travel_mm: float
    model_offset_m: float
    max_speed_m_s: float


@dataclass(frozen=True)
class BaseProfile:
    """The base's teleop speed caps."""

    max_linear_m_s: float
    max_yaw_rad_s: float


@dataclass(frozen=True)
class SimRates:
    """How often the MuJoCo sim publishes joint states and ground truth."""

    joint_state_hz: float
    ground_truth_hz: float


@dataclass(frozen=True)
class CommandLimitsProfile:
    """What the actuator nodes accept (the caps themselves are the base and
    lift speed caps and the model's joint ranges).

    Attributes:
        reject_factor: A speed over this many times its cap is rejected as absurd.
        joint_reject_margin_rad: A joint position farther than this outside its
            range is rejected as absurd.
        arm_max_speed_rad_s: Cap on the arms' velocity feedforward.
    """

    reject_factor: float
    joint_reject_margin_rad: float
    arm_max_speed_rad_s: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.reject_factor) and self.reject_factor > 1):
            raise ProfileError(f"reject_factor must be finite and > 1, got {self.reject_factor}")
        for key in ("joint_reject_margin_rad", "arm_max_speed_rad_s"):
            v = getattr(self, key)
            if not (math.isfinite(v) and v > 0):
                raise ProfileError(f"{key} must be finite and > 0, got {v}")


@dataclass(frozen=True)
class RobotProfile:
    """Everything in profile.yaml."""

    model: str
    scene: str
    base_frame: str
    world_frame: str
    odom_frame: str
    base_joints: tuple[str, ...]
    lift_joint: str
    arms: dict[str, ArmProfile]
    home_arm_q_rad: dict[str, float]
    gripper_open_rad: float
    lift: LiftProfile
    base: BaseProfile
    sim: SimRates
    command_limits: CommandLimitsProfile
    message_limits: MessageLimitsSettings

    def __post_init__(self) -> None:
        if set(self.arms) != {"left", "right"}:
            raise ProfileError(f"arms: expected left and right, got {sorted(self.arms)}")
        for arm in self.arms.values():
            for j in arm.joints:
                if j.removeprefix(f"{arm.side}_") not in self.home_arm_q_rad:
                    raise ProfileError(f"home_arm_q_rad: no value for {j.removeprefix(arm.side + '_')!r}")

    @property
    def arm_joint_names(self) -> tuple[str, ...]:
        """All 14 arm + gripper joints, left first."""
        return tuple(j for side in SIDES for j in self.arms[side].all_joints)

    def home_q(self) -> dict[str, float]:
        """Home position of every arm and gripper joint, by name."""
        out: dict[str, float] = {}
        for arm in self.arms.values():
            for joint in arm.joints:
                out[joint] = self.home_arm_q_rad[joint.removeprefix(f"{arm.side}_")]
            out[arm.gripper] = self.gripper_open_rad
        return out

    def lift_height_to_joint(self, height_m: float) -> float:
        """Driver height (0 = floor-homed) to the model's lift joint value."""
        return height_m + self.lift.model_offset_m

    def lift_joint_to_height(self, q: float) -> float:
        return q - self.lift.model_offset_m


def profile_from_dict(data: Mapping[str, Any]) -> RobotProfile:
    """Builds and checks a RobotProfile from the profile YAML's mapping."""
    return config_from_mapping(RobotProfile, data, error=ProfileError)
