"""The AlohaMini LeRobot feature layout, and teledora's values in its units.

The upstream AlohaMini LeRobot driver names its state and action entries
``arm_{left,right}_{joint}.pos`` (arm joints in degrees, LeRobot's degree
convention; the gripper 0..100 over its calibrated range), ``x.vel`` and
``y.vel`` (body-frame forward and left speed, m/s), ``theta.vel`` (yaw rate,
deg/s) and ``lift_axis.height_mm``. A dataset exported from teledora uses the
same names, order and units, so that data from either stack can be mixed.

teledora's own units are radians, metres and m/s (models/alohamini2/profile.yaml
names the joints); the mapping:

* arm joint ``<side>_<joint>`` -> ``arm_<side>_<joint>.pos`` = degrees(q)
  (``wrist_yaw_joint`` is called ``wrist_yaw`` upstream);
* gripper ``<side>_gripper`` (closure, 0 rad open .. ``closed_rad`` closed) ->
  ``arm_<side>_gripper.pos`` = 100 * (1 - q / closed_rad), i.e. 100 open, 0 closed;
* base twist (forward, left m/s; yaw rad/s) -> ``x.vel``, ``y.vel``, ``theta.vel`` (deg/s);
* lift height (m) -> ``lift_axis.height_mm``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

ARM_JOINTS = ("shoulder_pan", "shoulder_lift", "elbow_flex", "wrist_flex", "wrist_yaw", "wrist_roll", "gripper")
SIDES = ("left", "right")
BASE_KEYS = ("x.vel", "y.vel", "theta.vel")
LIFT_KEY = "lift_axis.height_mm"
# teledora joint names that differ from the upstream motor names
_TELEDORA_JOINT = {"wrist_yaw": "wrist_yaw_joint"}


def state_names() -> list[str]:
    """``observation.state`` (and ``action``) entry names, in order."""
    arms = [f"arm_{side}_{joint}.pos" for side in SIDES for joint in ARM_JOINTS]
    return arms + list(BASE_KEYS) + [LIFT_KEY]


def teledora_joint(side: str, joint: str) -> str:
    """The teledora joint name behind an upstream ``arm_<side>_<joint>``."""
    return f"{side}_{_TELEDORA_JOINT.get(joint, joint)}"


@dataclass(frozen=True)
class Units:
    """Numbers the conversion needs from the robot's configuration."""

    gripper_closed_rad: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.gripper_closed_rad) and self.gripper_closed_rad > 0):
            raise ValueError(f"gripper_closed_rad must be positive, got {self.gripper_closed_rad!r}")


def arm_values(joints: Mapping[str, float], units: Units) -> list[float]:
    """The 14 arm entries (degrees; grippers 0..100 open) from teledora joint positions (rad).

    Raises KeyError naming the first joint missing from ``joints``.
    """
    out = []
    for side in SIDES:
        for joint in ARM_JOINTS:
            q = float(joints[teledora_joint(side, joint)])
            if joint == "gripper":
                out.append(100.0 * (1.0 - q / units.gripper_closed_rad))
            else:
                out.append(math.degrees(q))
    return out


def base_values(forward_m_s: float, left_m_s: float, yaw_rad_s: float) -> list[float]:
    """``x.vel``, ``y.vel`` (m/s) and ``theta.vel`` (deg/s)."""
    return [float(forward_m_s), float(left_m_s), math.degrees(yaw_rad_s)]


def lift_value(height_m: float) -> float:
    """``lift_axis.height_mm`` from a lift height in metres."""
    return 1000.0 * float(height_m)


def joint_map(names: Sequence[str], values: Sequence[float]) -> dict[str, float]:
    """Name -> value for a name-addressed joint message."""
    if len(names) != len(values):
        raise ValueError(f"{len(names)} joint names but {len(values)} values")
    return dict(zip(names, values))
