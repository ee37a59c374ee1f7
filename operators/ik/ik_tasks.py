"""The IK's task terms: grip-site targets (a :class:`Pose` in base_link) as mink
poses, and the mink frame/posture tasks that remember their weighted error, so a
tick can tell whether a step overshot.
"""

from __future__ import annotations

import mink
import numpy as np

from teledora.operators.geometry import Pose, xyzw_to_wxyz


def pose_to_se3(pose: Pose) -> mink.SE3:
    """A base-frame pose (x, y, z, w orientation) as mink's SE3 (w, x, y, z)."""
    return mink.SE3(wxyz_xyz=np.concatenate([xyzw_to_wxyz(pose.orientation), pose.position]))


class MeritFrameTask(mink.FrameTask):
    """A FrameTask that remembers the squared weighted error of its last QP residual."""

    last_merit = 0.0

    def compute_qp_residual(self, configuration: mink.Configuration):  # type: ignore[override]
        residual = super().compute_qp_residual(configuration)
        self.last_merit = float(residual[1] @ residual[1])
        return residual


class MeritPostureTask(mink.PostureTask):
    """A PostureTask that remembers the squared weighted error of its last QP residual."""

    last_merit = 0.0

    def compute_qp_residual(self, configuration: mink.Configuration):  # type: ignore[override]
        residual = super().compute_qp_residual(configuration)
        self.last_merit = float(residual[1] @ residual[1])
        return residual
