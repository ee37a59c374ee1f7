"""The IK's task terms: grip-site targets and the mink frame/posture tasks that
remember their weighted error, so a tick can tell whether a step overshot.
"""

from __future__ import annotations

from dataclasses import dataclass

import mink
import numpy as np
import numpy.typing as npt

from teledora.operators.geometry.rotations import quat_normalize, xyzw_to_wxyz


@dataclass(frozen=True)
class GripTarget:
    """A grip-site target in base_link: position (m) and orientation (x, y, z, w)."""

    position: np.ndarray
    orientation: np.ndarray

    @classmethod
    def of(cls, position: npt.ArrayLike, orientation_xyzw: npt.ArrayLike) -> "GripTarget":
        return cls(np.asarray(position, dtype=float).copy(), quat_normalize(orientation_xyzw))

    def se3(self) -> mink.SE3:
        return mink.SE3(wxyz_xyz=np.concatenate([xyzw_to_wxyz(self.orientation), self.position]))


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
