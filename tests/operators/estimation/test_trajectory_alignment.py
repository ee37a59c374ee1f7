"""Alignment of an estimate onto truth."""

from __future__ import annotations

import numpy as np
import pytest

from teledora.operators.estimation.trajectory_alignment import AlignmentError, align, umeyama
from teledora.operators.estimation.trajectory_association import Trajectory
from tests.operators.estimation.trajectory_cases import arc, line, lissajous, rotated, stamps


def test_se2_recovers_rotation_and_translation():
    truth = lissajous(stamps())
    theta = 0.4
    est = rotated(truth, theta)
    est = Trajectory(est.stamps_ns, est.positions + [1.0, -2.0, 0.0], est.orientations)
    t = align(est, truth, "se2")
    assert t.yaw == pytest.approx(-theta)
    assert t.apply(est).positions == pytest.approx(truth.positions, abs=1e-9)
    assert t.apply(est).yaw == pytest.approx(truth.yaw, abs=1e-9)


def test_origin_alignment_uses_first_pose_only():
    truth = arc(stamps())
    est = rotated(truth, 0.3)
    t = align(est, truth, "origin")
    aligned = t.apply(est)
    assert aligned.positions[0] == pytest.approx(truth.positions[0], abs=1e-12)
    assert aligned.positions == pytest.approx(truth.positions, abs=1e-9)  # a rigid motion: exact everywhere


def test_sim3_recovers_scale_se3_does_not():
    truth = lissajous(stamps())
    est = Trajectory(truth.stamps_ns, 1.25 * truth.positions, truth.orientations)
    assert align(est, truth, "sim3").scale == pytest.approx(1 / 1.25)
    assert align(est, truth, "se3").scale == 1.0
    assert align(est, truth, "sim3").apply(est).positions == pytest.approx(truth.positions, abs=1e-9)


def test_se3_on_planar_data_is_a_proper_rotation():
    truth = lissajous(stamps())
    est = Trajectory(truth.stamps_ns, truth.positions + [0, 0, 0.3], truth.orientations)
    t = align(est, truth, "se3")
    assert np.linalg.det(t.rotation) == pytest.approx(1.0)
    assert t.apply(est).positions == pytest.approx(truth.positions, abs=1e-9)


def test_none_is_identity_and_errors():
    truth = line(stamps())
    assert align(truth, truth, "none").rotation == pytest.approx(np.eye(3))
    with pytest.raises(AlignmentError, match="one of"):
        align(truth, truth, "affine")
    with pytest.raises(AlignmentError, match="paired"):
        align(truth, truth.select(slice(0, 5)), "se2")
    still = Trajectory.from_planar([1, 2, 3], [1, 1, 1], [0, 0, 0], [0, 0, 0])
    with pytest.raises(AlignmentError, match="move"):
        align(still, still, "se2")
    with pytest.raises(AlignmentError):
        umeyama(np.zeros((1, 2)), np.zeros((1, 2)))
