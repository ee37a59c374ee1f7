"""Geometry shared by every subsystem: quaternions (x, y, z, w), rigid poses,
planar (SE(2)) poses and angle wrapping."""

from teledora.operators.geometry.angles import wrap_angle
from teledora.operators.geometry.pose import Pose
from teledora.operators.geometry.pose_error import PoseError
from teledora.operators.geometry.quaternions import (
    matrices_to_quats,
    matrix_to_quat,
    quat_angle,
    quat_conjugate,
    quat_from_rotvec,
    quat_multiply,
    quat_normalize,
    quat_power,
    quat_slerp,
    quat_to_matrix,
    quat_to_rotvec,
    wxyz_to_xyzw,
    xyzw_to_wxyz,
    yaw_to_quat,
)
from teledora.operators.geometry.se2 import Pose2D, Se2InputError, integrate_constant_twist, lerp_planar

__all__ = [
    "Pose",
    "Pose2D",
    "PoseError",
    "Se2InputError",
    "integrate_constant_twist",
    "lerp_planar",
    "matrices_to_quats",
    "matrix_to_quat",
    "quat_angle",
    "quat_conjugate",
    "quat_from_rotvec",
    "quat_multiply",
    "quat_normalize",
    "quat_power",
    "quat_slerp",
    "quat_to_matrix",
    "quat_to_rotvec",
    "wrap_angle",
    "wxyz_to_xyzw",
    "xyzw_to_wxyz",
    "yaw_to_quat",
]
