"""Relative (anchored) mapping from a hand controller pose to a gripper target pose.

At an anchoring instant the mapping remembers the controller pose ``C0`` and the
robot's gripper pose ``R0``. Afterwards a controller pose ``C`` maps to

    position    = R0.p + s * (C.p - C0.p)
    orientation = (C.q * C0.q^-1)^s * R0.q

i.e. the controller's displacement and its rotation (both expressed in the
operator's FLU frame) are applied, scaled by ``s``, to the anchored gripper
pose (expressed in base_link). Nothing about the absolute offset between the
operator and the robot matters, so anchoring never makes the gripper jump.

Re-anchoring is how clutching, pausing, reconnects and scale changes stay
jump-free: drop the mapping and anchor again at the current poses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teledora.operators.errors import ConfigError
from teledora.operators.geometry import Pose, quat_conjugate, quat_multiply, quat_normalize, quat_power


class MappingScaleError(ConfigError):
    """A mapping scale that is not a positive finite number."""


@dataclass(frozen=True)
class AnchoredMapping:
    """One arm's controller-to-target mapping, fixed at an anchor.

    Args:
        controller_anchor: Controller pose at the anchoring instant (operator FLU frame).
        robot_anchor: Gripper pose at the anchoring instant (base_link).
        scale: Motion scale (1.0 normal, 0.1 slow).
    """

    controller_anchor: Pose
    robot_anchor: Pose
    scale: float = 1.0

    def __post_init__(self) -> None:
        if not (np.isfinite(self.scale) and self.scale > 0.0):
            raise MappingScaleError(f"scale must be a positive finite number, got {self.scale}")

    def target(self, controller: Pose) -> Pose:
        """The gripper target for the current controller pose."""
        delta_p = controller.position - self.controller_anchor.position
        position = self.robot_anchor.position + self.scale * delta_p
        delta_q = quat_multiply(controller.orientation, quat_conjugate(self.controller_anchor.orientation))
        if self.scale != 1.0:
            delta_q = quat_power(delta_q, self.scale)
        orientation = quat_normalize(quat_multiply(delta_q, self.robot_anchor.orientation))
        return Pose(position, orientation)

    def rescaled(self, controller: Pose, scale: float) -> "AnchoredMapping":
        """A mapping with a new scale that continues from the current target (no jump)."""
        return AnchoredMapping(controller, self.target(controller), scale)
