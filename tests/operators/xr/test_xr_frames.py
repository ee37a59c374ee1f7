"""WebXR -> FLU conversion and quaternion helpers."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.geometry import PoseError, quat_from_rotvec, quat_to_matrix, quat_to_rotvec
from teledora.operators.xr.xr_frames import webxr_pose_to_flu, webxr_position_to_flu, webxr_quaternion_to_flu


@pytest.mark.parametrize(
    "xr, flu",
    [
        ((0, 0, -1), (1, 0, 0)),  # WebXR forward is -z
        ((1, 0, 0), (0, -1, 0)),  # WebXR right is FLU -y
        ((0, 1, 0), (0, 0, 1)),  # up stays up
        ((0.25, 1.5, -0.4), (0.4, -0.25, 1.5)),
    ],
)
def test_positions(xr, flu):
    np.testing.assert_allclose(webxr_position_to_flu(xr), flu)


@pytest.mark.parametrize(
    "xr_rotvec, flu_rotvec",
    [
        ((0, 0.3, 0), (0, 0, 0.3)),  # yaw left about WebXR +y is yaw left about FLU +z
        ((0.2, 0, 0), (0, -0.2, 0)),
        ((0, 0, 0.4), (-0.4, 0, 0)),
    ],
)
def test_orientations_are_conjugated(xr_rotvec, flu_rotvec):
    q = webxr_quaternion_to_flu(quat_from_rotvec(xr_rotvec))
    np.testing.assert_allclose(quat_to_rotvec(q), flu_rotvec, atol=1e-12)


def test_conversion_commutes_with_rotating_a_vector():
    rng = np.random.default_rng(3)
    for _ in range(20):
        q_xr = quat_from_rotvec(rng.normal(0, 1, 3))
        v_xr = rng.normal(0, 1, 3)
        rotated_then_converted = webxr_position_to_flu(quat_to_matrix(q_xr) @ v_xr)
        converted_then_rotated = quat_to_matrix(webxr_quaternion_to_flu(q_xr)) @ webxr_position_to_flu(v_xr)
        np.testing.assert_allclose(rotated_then_converted, converted_then_rotated, atol=1e-12)


def test_pose_rejects_garbage():
    with pytest.raises(PoseError):
        webxr_pose_to_flu([0, 0], [0, 0, 0, 1])
    with pytest.raises(PoseError):
        webxr_pose_to_flu([0, 0, 0], [0, 0, 0, 0])
    with pytest.raises(PoseError):
        webxr_pose_to_flu([0, float("nan"), 0], [0, 0, 0, 1])
