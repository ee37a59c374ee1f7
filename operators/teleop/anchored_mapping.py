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

An arm that resumes with a kept mapping (after samples that arrived late) is
not where the mapping puts the hand: ``CatchUp`` starts its target at the
robot's pose and closes the difference at bounded linear and angular speeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teledora.operators.errors import ConfigError
from teledora.operators.geometry import (
    Pose,
    quat_conjugate,
    quat_from_rotvec,
    quat_multiply,
    quat_normalize,
    quat_power,
    quat_to_rotvec,
)


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


def _shrunk(v: np.ndarray, by: float) -> np.ndarray | None:
    """``v`` made ``by`` shorter along itself; None once nothing is left."""
    n = float(np.linalg.norm(v))
    if n <= by:
        return None
    return v * ((n - by) / n)


@dataclass(frozen=True, eq=False)
class CatchUp:
    """What is left between a published target and the mapping's target.

    The published target is the mapping's target moved by ``offset_m`` and
    turned by ``rotvec_rad`` (both in base_link, applied on the left); each
    step closes them by at most the speeds times the time since the last step,
    along the straight line and the shortest arc, so that the published target
    moves from one step to the next by the mapping's own motion plus at most
    that much.

    Args:
        offset_m: Position left to close (m).
        rotvec_rad: Rotation left to close, as a rotation vector (rad).
        stamp_ns: When the published target last had this offset.
    """

    offset_m: np.ndarray
    rotvec_rad: np.ndarray
    stamp_ns: int

    @classmethod
    def between(cls, start: Pose, target: Pose, now_ns: int) -> "CatchUp":
        """The catch-up that publishes ``start`` now, for a mapping at ``target``."""
        dq = quat_multiply(start.orientation, quat_conjugate(target.orientation))
        return cls(np.asarray(start.position - target.position, dtype=float), quat_to_rotvec(dq), now_ns)

    def advance(self, target: Pose, now_ns: int, speed_m_s: float, rate_rad_s: float) -> tuple[Pose, "CatchUp | None"]:
        """The target to publish at ``now_ns`` for the mapping's ``target``, and
        what is left to close (None once the two agree)."""
        dt_s = max(0, now_ns - self.stamp_ns) * 1e-9
        offset, rotvec = _shrunk(self.offset_m, speed_m_s * dt_s), _shrunk(self.rotvec_rad, rate_rad_s * dt_s)
        if offset is None and rotvec is None:
            return target, None
        position = target.position if offset is None else target.position + offset
        orientation = target.orientation
        if rotvec is not None:
            orientation = quat_normalize(quat_multiply(quat_from_rotvec(rotvec), target.orientation))
        left = CatchUp(np.zeros(3) if offset is None else offset, np.zeros(3) if rotvec is None else rotvec, now_ns)
        return Pose(position, orientation), left
