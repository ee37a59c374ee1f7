import math

import numpy as np
import pytest

from teledora.operators.geometry import (
    PoseError,
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

S = math.sqrt(0.5)
Z90 = np.array([0.0, 0.0, S, S])  # 90 degrees about +z, (x, y, z, w)
X90 = np.array([S, 0.0, 0.0, S])


def test_mujoco_order_conversion():
    assert xyzw_to_wxyz([1, 2, 3, 4]).tolist() == [4, 1, 2, 3]
    assert wxyz_to_xyzw([4, 1, 2, 3]).tolist() == [1, 2, 3, 4]


def test_normalize_gives_unit_length_with_w_not_negative():
    q = quat_normalize([0.0, 0.0, -3.0, -4.0])
    assert q.tolist() == pytest.approx([0.0, 0.0, 0.6, 0.8])
    assert quat_normalize([0.0, 0.0, 0.6, 0.8]).tolist() == pytest.approx([0.0, 0.0, 0.6, 0.8])


@pytest.mark.parametrize(
    "bad", [[0, 0, 0, 0], [1e-9, 0, 0, 0], [0, 0, float("nan"), 1], [0, float("inf"), 0, 1], [0, 0, 1], [[0, 0, 0, 1]] * 2]
)
def test_normalize_rejects_what_has_no_direction(bad):
    # a zero or non-finite quaternion must not silently become some rotation
    with pytest.raises(PoseError):
        quat_normalize(bad)


def test_pose_error_is_a_value_error():
    with pytest.raises(ValueError):
        quat_normalize([0, 0, 0, 0])


def test_product_composes_rotations():
    # apply X90 first, then Z90: x axis -> x -> y ; y axis -> z -> z
    q = quat_multiply(Z90, X90)
    r = quat_to_matrix(q)
    np.testing.assert_allclose(r @ [1, 0, 0], [0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(r @ [0, 1, 0], [0, 0, 1], atol=1e-15)
    np.testing.assert_allclose(quat_multiply(Z90, Z90), [0, 0, 1, 0], atol=1e-15)
    np.testing.assert_allclose(quat_multiply(Z90, quat_conjugate(Z90)), [0, 0, 0, 1], atol=1e-15)


def test_matrix_of_a_known_rotation():
    np.testing.assert_allclose(quat_to_matrix(Z90), [[0, -1, 0], [1, 0, 0], [0, 0, 1]], atol=1e-15)
    np.testing.assert_allclose(quat_to_matrix(yaw_to_quat(0.3)), [
        [math.cos(0.3), -math.sin(0.3), 0], [math.sin(0.3), math.cos(0.3), 0], [0, 0, 1]], atol=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_matrix_round_trip_on_every_branch(seed):
    rng = np.random.default_rng(seed)
    # near 180 degrees about each axis the trace is negative: exercises the other branches
    for q in [quat_normalize(rng.normal(size=4)), [1, 0, 0, 0.01], [0, 1, 0, 0.01], [0, 0, 1, 0.01]]:
        q = quat_normalize(q)
        back = matrix_to_quat(quat_to_matrix(q))
        assert back[3] >= 0
        np.testing.assert_allclose(back, q, atol=1e-12)


def test_batched_matrices_give_exactly_the_one_at_a_time_quaternions():
    """Every branch (positive trace, and each diagonal element largest), w < 0
    before normalising, and the boundaries where two diagonal elements tie."""
    rng = np.random.default_rng(7)
    qs = [quat_normalize(rng.normal(size=4)) for _ in range(200)]
    qs += [quat_normalize(q) for q in ([1, 0, 0, 0.01], [0, 1, 0, 0.01], [0, 0, 1, 0.01], [1, 1, 0, 0], [0, 1, 1, 0], [1, 0, 1, 0])]
    mats = np.array([quat_to_matrix(q) for q in qs] + [np.eye(3), np.diag([1.0, -1.0, -1.0]), np.diag([-1.0, -1.0, 1.0])])
    batched = matrices_to_quats(mats)
    assert batched.shape == (len(mats), 4)
    for m, q in zip(mats, batched):
        assert q.tolist() == matrix_to_quat(m).tolist()


@pytest.mark.parametrize("bad", [np.full((2, 3, 3), np.nan), np.diag([1.0, 1.0, np.inf])])
def test_batched_matrices_refuse_what_is_not_a_rotation(bad):
    with pytest.raises(PoseError):
        matrices_to_quats(bad)


def test_rotation_vector_round_trip_and_power():
    rv = np.array([0.2, -0.5, 0.9])
    np.testing.assert_allclose(quat_to_rotvec(quat_from_rotvec(rv)), rv, atol=1e-14)
    np.testing.assert_allclose(quat_to_rotvec(Z90), [0, 0, math.pi / 2], atol=1e-15)
    assert quat_angle([0, 0, 0, 1], quat_power(quat_from_rotvec([0, 0, 1.0]), 0.1)) == pytest.approx(0.1)


def test_angle_is_accurate_for_tiny_and_large_rotations():
    assert quat_angle(Z90, Z90) == 0.0
    assert quat_angle([0, 0, 0, 1], Z90) == pytest.approx(math.pi / 2, abs=1e-15)
    assert quat_angle(Z90, -Z90) == pytest.approx(0.0, abs=1e-15)  # same rotation, opposite sign
    tiny = quat_from_rotvec([1e-10, 0, 0])
    assert quat_angle([0, 0, 0, 1], tiny) == pytest.approx(1e-10, rel=1e-6)


def test_slerp_follows_the_shortest_arc():
    a, b = yaw_to_quat(0.0), yaw_to_quat(1.0)
    np.testing.assert_allclose(quat_slerp(a, b, 0.25), yaw_to_quat(0.25), atol=1e-15)
    # b and -b are one rotation: the result must not take the long way round
    np.testing.assert_allclose(quat_slerp(a, -b, 0.5), yaw_to_quat(0.5), atol=1e-15)
    assert quat_angle(quat_slerp(a, yaw_to_quat(1e-4), 0.5), yaw_to_quat(5e-5)) < 1e-12  # near-parallel branch
