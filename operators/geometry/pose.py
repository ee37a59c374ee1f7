"""A rigid pose: position and orientation in one frame.

The frame is the one its producer names: grip targets and grip poses are in
the robot base frame (base_link, FLU), controller poses in the operator's FLU
frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from teledora.operators.geometry.pose_error import PoseError
from teledora.operators.geometry.quaternions import quat_normalize

_IDENTITY_XYZW = (0.0, 0.0, 0.0, 1.0)


@dataclass(frozen=True)
class Pose:
    """Position (m, shape (3,)) and unit quaternion orientation (x, y, z, w)."""

    position: np.ndarray
    orientation: np.ndarray

    @staticmethod
    def of(position: npt.ArrayLike, orientation: npt.ArrayLike) -> "Pose":
        """Builds a validated pose from copies of the inputs; the quaternion is
        normalised (w >= 0).

        Raises:
            PoseError: position is not 3 finite values or the quaternion is not 4
                finite values with a usable norm.
        """
        p = np.array(position, dtype=np.float64).reshape(-1)
        if p.shape != (3,) or not np.isfinite(p).all():
            raise PoseError(f"position must be 3 finite values, got {p.tolist()}")
        return Pose(p, quat_normalize(orientation))

    @staticmethod
    def identity() -> "Pose":
        """The origin with no rotation."""
        return Pose(np.zeros(3), np.array(_IDENTITY_XYZW))
