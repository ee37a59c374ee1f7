"""WebXR reference space to the robot's FLU convention.

WebXR spaces are right-handed with +x right, +y up and -z forward (the way the
wearer faced when the session started). The project's frames are FLU: +x
forward, +y left, +z up. The change of basis is a fixed proper rotation

    x_flu = -z_xr,   y_flu = -x_xr,   z_flu = y_xr

so positions are multiplied by that matrix and orientations are conjugated by
it. For a quaternion that means the vector part is rotated the same way while
the scalar part is unchanged. All quaternions here are (x, y, z, w); the
quaternion maths lives in :mod:`teledora.operators.geometry`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from teledora.operators.geometry import Pose, quat_normalize

#: Rotation matrix taking WebXR-space vectors to FLU vectors.
WEBXR_TO_FLU = np.array([[0.0, 0.0, -1.0], [-1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])


def webxr_position_to_flu(position: npt.ArrayLike) -> np.ndarray:
    """A WebXR-space point (+x right, +y up, -z forward) in FLU coordinates."""
    p = np.asarray(position, dtype=np.float64).reshape(3)
    return WEBXR_TO_FLU @ p


def webxr_quaternion_to_flu(q: npt.ArrayLike) -> np.ndarray:
    """A WebXR-space orientation (x, y, z, w) re-expressed in the FLU basis."""
    qn = quat_normalize(q)
    v = WEBXR_TO_FLU @ qn[:3]
    return quat_normalize([v[0], v[1], v[2], qn[3]])


def webxr_pose_to_flu(position: npt.ArrayLike, orientation: npt.ArrayLike) -> Pose:
    """A WebXR pose (e.g. a target-ray pose in ``local-floor``) as an FLU pose.

    Raises:
        PoseError: malformed input.
    """
    pose = Pose.of(position, orientation)
    return Pose(webxr_position_to_flu(pose.position), webxr_quaternion_to_flu(pose.orientation))

