"""Motive Y-up → z-up world and rigid body → base_link."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from teledora import models
from teledora.models.config_files import load_mocap_config
from teledora.operators.mocap.mocap_frames import (
    MocapFrameConfig,
    MocapFrameError,
    MocapFrameTransform,
    axis_map_matrix,
    rot_z,
)
from teledora.operators.geometry import matrix_to_quat, quat_angle

FRAME = load_mocap_config().frame  # Motive Y-up, no offsets


def test_default_axis_map_is_y_up_to_z_up():
    t = MocapFrameTransform(FRAME)
    # Motive y (up) becomes world z; Motive z becomes world -y; x stays x.
    assert t.position_to_world([0, 1, 0]) == pytest.approx([0, 0, 1])
    assert t.position_to_world([0, 0, 1]) == pytest.approx([0, -1, 0])
    assert t.position_to_world([2, 0, 0]) == pytest.approx([2, 0, 0])


def test_yaw_about_motive_up_is_yaw_about_world_z():
    """A body turned by +θ about Motive's up axis (y) has world heading +θ."""
    t = MocapFrameTransform(FRAME)
    theta = 0.7
    c, s = np.cos(theta), np.sin(theta)
    r_about_y = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    x, y, yaw = t.base_pose_planar([1.0, 0.3, -2.0], matrix_to_quat(r_about_y))
    assert (x, y) == pytest.approx((1.0, 2.0))
    assert yaw == pytest.approx(theta)


def test_offsets_and_base_mount():
    cfg = replace(
        FRAME,
        world_offset_m=(0.5, -1.0, 0.0),
        world_yaw_offset_rad=np.pi / 2,
        base_offset_in_body_m=(0.0, 0.0, -1.2),  # markers 1.2 m above base_link
        base_yaw_in_body_rad=0.1,
    )
    t = MocapFrameTransform(cfg)
    p, q = t.base_pose([1.0, 1.2, 0.0], [0, 0, 0, 1])
    # Motive x=1 → world x=1 → yawed 90° → world y=1; then offset.
    assert p == pytest.approx([0.5, 0.0, 0.0])
    assert quat_angle(q, matrix_to_quat(rot_z(np.pi / 2 + 0.1))) == pytest.approx(0.0, abs=1e-9)


def test_inverse_round_trip():
    cfg = replace(FRAME, world_offset_m=(1, 2, 0), world_yaw_offset_rad=0.3, base_offset_in_body_m=(0.1, 0, -0.9),
                  base_yaw_in_body_rad=-0.2)
    t = MocapFrameTransform(cfg)
    q_base = matrix_to_quat(rot_z(2.5))
    pm, qm = t.motive_pose_of_base([3.0, -1.0, 0.0], q_base)
    p, q = t.base_pose(pm, qm)
    assert p == pytest.approx([3.0, -1.0, 0.0])
    assert quat_angle(q, q_base) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize("bad", [("x", "y"), ("x", "x", "z"), ("x", "q", "z"), ("x", "z", "y")])
def test_bad_axis_maps_rejected(bad):
    with pytest.raises(MocapFrameError):
        axis_map_matrix(bad)


def test_z_up_identity_map():
    assert axis_map_matrix(("x", "y", "z")) == pytest.approx(np.eye(3))


def test_from_mapping_validates():
    raw = models.load_yaml("alohamini2/mocap.yaml")["frame"]
    cfg = MocapFrameConfig.from_mapping({**raw, "axis_map": ["x", "y", "z"], "world_offset_m": [1, 2, 3]})
    assert cfg.world_offset_m == (1.0, 2.0, 3.0) and cfg.axis_map == ("x", "y", "z")
    with pytest.raises(MocapFrameError, match="unknown"):
        MocapFrameConfig.from_mapping({**raw, "axis": ["x", "y", "z"]})
    with pytest.raises(MocapFrameError, match=r"world_offset_m \(m\): expected 3 values"):
        MocapFrameConfig.from_mapping({**raw, "world_offset_m": [1, 2]})
    with pytest.raises(MocapFrameError, match=r"world_offset_m\[2\] \(m\): expected a finite number"):
        MocapFrameConfig.from_mapping({**raw, "world_offset_m": [1, 2, float("nan")]})
