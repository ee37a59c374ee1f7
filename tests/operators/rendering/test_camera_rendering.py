"""Camera rendering setup: camera settings written into a MuJoCo model, what a
camera image hides, the distortion warp and the metadata sent with an image."""

from __future__ import annotations

import dataclasses

import mujoco
import numpy as np
import pytest

from teledora import models
from teledora.operators.rendering.camera_intrinsics import (
    CameraSettings,
    distortion_maps,
    intrinsics_from_fovy,
    renderer_config_from_dict,
)
from teledora.operators.rendering.camera_rendering import (
    camera_frame_metadata,
    RENDER_PLANE_GRID_M,
    camera_scene_option,
    coarsen_plane_grids,
    distort_image,
    prepare_camera_model,
    set_render_flags,
)
from teledora.operators.model.urdf_import import CAMERA_HOUSING_GROUP

CONFIG = renderer_config_from_dict(models.load_yaml("alohamini2/renderer.yaml"))
MODEL_PATH = str(models.path(CONFIG.model.path))


def load() -> mujoco.MjModel:
    return mujoco.MjModel.from_xml_path(MODEL_PATH)


def camera(cam: str, **changes) -> CameraSettings:
    return dataclasses.replace(CONFIG.cameras[cam], **changes)


def test_field_of_view_and_buffer_follow_the_cameras():
    model = load()
    cams = [camera("chest", fovy_deg=50.0, width=96, height=200), camera("top_back", fovy_deg=80.0, width=320, height=72)]
    ids = prepare_camera_model(model, CONFIG, cams, MODEL_PATH)
    assert ids == {c.name: model.camera(c.name).id for c in cams}
    assert model.cam_fovy[ids["chest"]] == 50.0 and model.cam_fovy[ids["top_back"]] == 80.0
    # the offscreen buffer fits the widest and the tallest camera
    assert (model.vis.global_.offwidth, model.vis.global_.offheight) == (320, 200)


def test_near_plane_is_the_configured_distance_whatever_the_model_extent():
    model = load()
    config = dataclasses.replace(CONFIG, near_clip_m=0.02)
    prepare_camera_model(model, config, [camera("left_wrist")], MODEL_PATH)
    # MuJoCo's near plane is znear times the model extent
    assert model.vis.map.znear * model.stat.extent == pytest.approx(0.02)


def test_roll_turns_the_image_about_the_optical_axis():
    plain, rolled = load(), load()
    prepare_camera_model(plain, CONFIG, [camera("chest", roll_deg=0.0)], MODEL_PATH)
    prepare_camera_model(rolled, CONFIG, [camera("chest", roll_deg=90.0)], MODEL_PATH)
    poses = []
    for model in (plain, rolled):
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        poses.append(data.cam_xmat[model.camera("chest").id].reshape(3, 3).copy())
    before, after = poses
    # columns are the camera axes: x turns into the old y, y into the old -x, z (optical axis) stays
    np.testing.assert_allclose(after[:, 0], before[:, 1], atol=1e-9)
    np.testing.assert_allclose(after[:, 1], -before[:, 0], atol=1e-9)
    np.testing.assert_allclose(after[:, 2], before[:, 2], atol=1e-9)


def test_shadow_map_is_dropped_only_without_shadows():
    default = load().vis.quality.shadowsize
    for shadows, expected in ((False, 0), (True, default)):
        model = load()
        config = dataclasses.replace(CONFIG, shadows=shadows, multisamples=4)
        prepare_camera_model(model, config, [camera("chest")], MODEL_PATH)
        assert model.vis.quality.shadowsize == expected and model.vis.quality.offsamples == 4


def test_only_plane_grids_finer_than_the_render_grid_are_coarsened():
    model = load()
    floor = model.geom("floor").id
    assert 0 < model.geom_size[floor, 2] < RENDER_PLANE_GRID_M  # the shipped floor's fine grid
    model.geom_size[floor, 2] = 0.0  # a plane without a grid spacing is left alone
    before = model.geom_size.copy()
    coarsen_plane_grids(model)
    np.testing.assert_array_equal(model.geom_size, before)
    model = load()
    before = model.geom_size.copy()
    prepare_camera_model(model, CONFIG, [camera("chest")], MODEL_PATH)
    assert model.geom_size[floor, 2] == RENDER_PLANE_GRID_M
    others = np.arange(model.ngeom) != floor  # the walls, tables, robot: every other size as loaded
    np.testing.assert_array_equal(model.geom_size[others], before[others])
    np.testing.assert_array_equal(model.geom_size[floor, :2], before[floor, :2])


def test_a_camera_the_model_lacks_is_refused_naming_the_model():
    with pytest.raises(ValueError, match=r"model scene\.xml has no camera 'nose'"):
        prepare_camera_model(load(), CONFIG, [camera("chest", name="nose")], "scene.xml")


def test_camera_images_hide_sites_and_camera_housings_only():
    option = camera_scene_option()
    default = mujoco.MjvOption()
    assert not any(option.sitegroup)
    assert option.geomgroup[CAMERA_HOUSING_GROUP] == 0
    others = [g for g in range(len(default.geomgroup)) if g != CAMERA_HOUSING_GROUP]
    assert [option.geomgroup[g] for g in others] == [default.geomgroup[g] for g in others]


def test_shadows_and_reflections_switch_together():
    scene = mujoco.MjvScene(load(), maxgeom=10)
    flags = (mujoco.mjtRndFlag.mjRND_SHADOW, mujoco.mjtRndFlag.mjRND_REFLECTION)
    set_render_flags(scene, False)
    assert [scene.flags[f] for f in flags] == [0, 0]
    set_render_flags(scene, True)
    assert [scene.flags[f] for f in flags] == [1, 1]


def test_distortion_warp_samples_the_ideal_image_where_the_maps_point():
    intr = intrinsics_from_fovy(160, 120, 70.0, (-0.3, 0.08, 0.001, -0.002, 0.0))
    map_x, map_y = distortion_maps(intr)
    # a ramp in x (red) and y (green): each warped pixel shows the coordinates it was taken from
    u, v = np.meshgrid(np.arange(160), np.arange(120))
    ideal = np.stack([u, v, np.zeros_like(u)], axis=2).astype(np.uint8)
    warped = distort_image(ideal, (map_x, map_y))
    assert warped.shape == ideal.shape and warped.dtype == np.uint8
    inside = (map_x >= 0) & (map_x <= 159) & (map_y >= 0) & (map_y <= 119)
    assert np.abs(warped[..., 0][inside] - map_x[inside]).max() <= 1.0
    assert np.abs(warped[..., 1][inside] - map_y[inside]).max() <= 1.0
    assert np.abs(warped.astype(int) - ideal).max() > 5  # barrel distortion moves the edges


def test_zero_distortion_warp_leaves_the_image_unchanged():
    intr = intrinsics_from_fovy(64, 48, 60.0)
    image = np.random.default_rng(0).integers(0, 256, (48, 64, 3), dtype=np.uint8)
    np.testing.assert_array_equal(distort_image(image, distortion_maps(intr)), image)


def test_frame_metadata_carries_intrinsics_distortion_and_stamps():
    intr = intrinsics_from_fovy(96, 72, 65.0, (-0.1, 0.01, 0.0, 0.0, 0.002))
    meta = camera_frame_metadata("left_wrist", intr, stamp_ns=50, render_ns=70.0, oldest_state_stamp_ns=40)
    assert meta == {
        "width": 96, "height": 72, "encoding": "rgb8", "camera": "left_wrist", "stamp_ns": 50,
        "fx": intr.fx, "fy": intr.fy, "cx": 47.5, "cy": 35.5,
        "distortion_model": "plumb_bob", "distortion": [-0.1, 0.01, 0.0, 0.0, 0.002],
        "frame_id": "left_wrist_optical", "render_ns": 70, "capture_ns": 70, "oldest_state_stamp_ns": 40,
    }
    assert isinstance(meta["render_ns"], int)


def test_a_frame_goes_out_as_a_jpeg_of_the_render_or_as_its_raw_pixels():
    from teledora.operators.contract.messages import decode_image
    from teledora.operators.rendering.camera_rendering import camera_frame

    intr = intrinsics_from_fovy(64, 48, 60.0)
    y, x = np.mgrid[0:48, 0:64]
    image = np.stack([x * 4, y * 5, np.full_like(x, 120)], -1).astype(np.uint8)
    value, meta = camera_frame(image, "chest", intr, 50, 70, 40, jpeg_quality=90)
    assert meta["encoding"] == "jpeg" and meta["capture_ns"] == 70 and len(value) < image.nbytes / 3
    assert np.abs(decode_image(value, meta).astype(int) - image).mean() < 2
    value, meta = camera_frame(image, "chest", intr, 50, 70, 40)
    assert meta["encoding"] == "rgb8"
    np.testing.assert_array_equal(decode_image(value, meta), image)
    with pytest.raises(ValueError, match="intrinsics say 48x64"):
        camera_frame(image[:40], "chest", intr, 50, 70, 40, jpeg_quality=90)
