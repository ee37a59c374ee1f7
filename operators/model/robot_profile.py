"""The robot profile: joint groups, sites, cameras and limits as a typed object.

Built from the mapping in ``models/<robot>/profile.yaml`` (the node reads the
file; this module only interprets the data)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping


class ProfileError(ValueError):
    """The robot profile is missing a key or holds an inconsistent value."""


@dataclass(frozen=True)
class ArmProfile:
    side: str
    joints: tuple[str, ...]
    gripper: str
    grip_site: str
    camera: str

    @property
    def all_joints(self) -> tuple[str, ...]:
        return self.joints + (self.gripper,)


@dataclass(frozen=True)
class CameraProfile:
    name: str
    width: int
    height: int
    fovy_deg: float
    rate_hz: float


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
            raise ProfileError(f"command_limits.reject_factor must be finite and > 1, got {self.reject_factor}")
        for key in ("joint_reject_margin_rad", "arm_max_speed_rad_s"):
            v = getattr(self, key)
            if not (math.isfinite(v) and v > 0):
                raise ProfileError(f"command_limits.{key} must be finite and > 0, got {v}")


@dataclass(frozen=True)
class RobotProfile:
    robot: str
    model: str
    scene: str
    base_frame: str
    odom_frame: str
    world_frame: str
    base_joints: tuple[str, ...]
    lift_joint: str
    arms: dict[str, ArmProfile]
    home_arm_q_rad: dict[str, float]
    gripper_open_rad: float
    gripper_max_closure_rad: float
    lift_travel_mm: float
    lift_model_offset_m: float
    lift_max_speed_m_s: float
    base_max_linear_m_s: float
    base_max_yaw_rad_s: float
    command_limits: CommandLimitsProfile
    cameras: dict[str, CameraProfile]
    physics_hz: float
    joint_state_hz: float
    ground_truth_hz: float

    @property
    def arm_joint_names(self) -> tuple[str, ...]:
        """All 14 arm + gripper joints, left first."""
        return tuple(j for side in ("left", "right") for j in self.arms[side].all_joints)

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
        return height_m + self.lift_model_offset_m

    def lift_joint_to_height(self, q: float) -> float:
        return q - self.lift_model_offset_m


def _get(data: Mapping[str, Any], key: str, where: str = "profile") -> Any:
    if key not in data:
        raise ProfileError(f"{where}: missing key {key!r}")
    return data[key]


def profile_from_dict(data: Mapping[str, Any]) -> RobotProfile:
    """Builds and checks a RobotProfile from the profile YAML's mapping."""
    arms = {}
    for side in ("left", "right"):
        a = _get(_get(data, "arms"), side, "arms")
        arms[side] = ArmProfile(
            side=side,
            joints=tuple(_get(a, "joints", f"arms.{side}")),
            gripper=_get(a, "gripper", f"arms.{side}"),
            grip_site=_get(a, "grip_site", f"arms.{side}"),
            camera=_get(a, "camera", f"arms.{side}"),
        )
        if len(arms[side].joints) != 6:
            raise ProfileError(f"arms.{side}.joints: expected 6 joints, got {len(arms[side].joints)}")
    home = {k: float(v) for k, v in _get(data, "home_arm_q_rad").items()}
    for arm in arms.values():
        for j in arm.joints:
            if j.removeprefix(f"{arm.side}_") not in home:
                raise ProfileError(f"home_arm_q_rad: no value for {j.removeprefix(arm.side + '_')!r}")
    lift, base, sim = _get(data, "lift"), _get(data, "base"), _get(data, "sim")
    limits = _get(data, "command_limits")
    unknown = sorted(set(limits) - {"reject_factor", "joint_reject_margin_rad", "arm_max_speed_rad_s"})
    if unknown:
        raise ProfileError(f"command_limits: unknown keys {unknown}")
    cameras = {
        name: CameraProfile(name, int(c["width"]), int(c["height"]), float(c["fovy_deg"]), float(c["rate_hz"]))
        for name, c in _get(data, "cameras").items()
    }
    return RobotProfile(
        robot=_get(data, "robot"),
        model=_get(data, "model"),
        scene=_get(data, "scene"),
        base_frame=_get(data, "base_frame"),
        odom_frame=_get(data, "odom_frame"),
        world_frame=_get(data, "world_frame"),
        base_joints=tuple(_get(data, "base_joints")),
        lift_joint=_get(data, "lift_joint"),
        arms=arms,
        home_arm_q_rad=home,
        gripper_open_rad=float(_get(data, "gripper_open_rad")),
        gripper_max_closure_rad=float(_get(data, "gripper_max_closure_rad")),
        lift_travel_mm=float(_get(lift, "travel_mm", "lift")),
        lift_model_offset_m=float(_get(lift, "model_offset_m", "lift")),
        lift_max_speed_m_s=float(_get(lift, "max_speed_m_s", "lift")),
        base_max_linear_m_s=float(_get(base, "max_linear_m_s", "base")),
        base_max_yaw_rad_s=float(_get(base, "max_yaw_rad_s", "base")),
        command_limits=CommandLimitsProfile(
            reject_factor=float(_get(limits, "reject_factor", "command_limits")),
            joint_reject_margin_rad=float(_get(limits, "joint_reject_margin_rad", "command_limits")),
            arm_max_speed_rad_s=float(_get(limits, "arm_max_speed_rad_s", "command_limits")),
        ),
        cameras=cameras,
        physics_hz=float(_get(sim, "physics_hz", "sim")),
        joint_state_hz=float(_get(sim, "joint_state_hz", "sim")),
        ground_truth_hz=float(_get(sim, "ground_truth_hz", "sim")),
    )
