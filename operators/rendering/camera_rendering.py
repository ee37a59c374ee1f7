"""How the robot cameras are set up in a loaded MuJoCo model, and what is done
to and sent with each rendered image.

* :func:`prepare_camera_model` writes the configured field of view and roll
  into the model's cameras and sizes clipping and the offscreen buffer;
* :func:`coarsen_plane_grids` draws the floor with fewer quads (cheaper on
  a software rasterizer, the same picture to within 6 of 255);
* :func:`camera_scene_option` and :func:`set_render_flags` decide what a camera
  image shows (no marker sites, no camera housings; shadows and reflections
  only when configured);
* :func:`distort_image` warps an ideal render with the maps of
  ``camera_intrinsics.distortion_maps``;
* :func:`camera_frame_metadata` is the metadata published with an image, and
  :func:`camera_frame` the message itself: raw RGB, or one JPEG (the sim
  cameras' form, like the robot's cameras).

Everything here works on models, scenes and arrays it is given: loading the
model file and the GL renderers themselves belong to the renderer node.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from teledora.operators.rendering.camera_intrinsics import DISTORTION_MODEL, CameraIntrinsics, CameraSettings, RendererConfig
from teledora.operators.contract.compressed_image import JPEG, encode_jpeg
from teledora.operators.contract.messages import image_metadata
from teledora.operators.model.urdf_import import CAMERA_HOUSING_GROUP


def prepare_camera_model(
    model: Any, config: RendererConfig, cameras: Sequence[CameraSettings], model_name: str
) -> dict[str, int]:
    """Applies the renderer settings to a ``mujoco.MjModel``; returns camera name -> id.

    Args:
        model: The loaded model, changed in place.
        config: Renderer settings (near clip, multisampling, shadows).
        cameras: The cameras to render; each must exist in the model.
        model_name: How the model is named in errors (its file).

    Raises:
        ValueError: the model has no camera of that name.
    """
    import mujoco

    cam_id: dict[str, int] = {}
    for c in cameras:
        cid = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_CAMERA, c.name)
        if cid < 0:
            raise ValueError(f"model {model_name} has no camera {c.name!r}")
        cam_id[c.name] = cid
        model.cam_fovy[cid] = c.fovy_deg
        if c.roll_deg:  # turn the image about the optical axis (camera z)
            roll = np.zeros(4)
            mujoco.mju_axisAngle2Quat(roll, np.array([0.0, 0.0, 1.0]), np.radians(c.roll_deg))
            mujoco.mju_mulQuat(model.cam_quat[cid], model.cam_quat[cid].copy(), roll)
    # MuJoCo's near plane is a fraction of the model extent (11 m for the room):
    # at the default it would clip a wrist camera's own jaw.
    model.vis.map.znear = config.near_clip_m / max(float(model.stat.extent), 1e-6)
    # The offscreen buffer is blitted whole on every read: size it to the largest
    # camera, not to the model's default. Without shadows, skip the shadow map.
    model.vis.global_.offwidth = max((c.width for c in cameras), default=1)
    model.vis.global_.offheight = max((c.height for c in cameras), default=1)
    model.vis.quality.offsamples = config.multisamples
    coarsen_plane_grids(model)
    if not config.shadows:
        model.vis.quality.shadowsize = 0
    return cam_id


# MuJoCo draws a plane as a grid of quads at the spacing of its third size
# (0.05 m for the room's floor: 12,000 quads). On a software rasterizer the
# floor then costs about a quarter of a 640x480 frame; at 0.25 m the frame
# differs by at most 6 of 255 per channel (docs/cameras.md).
RENDER_PLANE_GRID_M = 0.25


def coarsen_plane_grids(model: Any) -> None:
    """Draws planes with grid cells of at least ``RENDER_PLANE_GRID_M``.

    Changes only how the loaded ``mujoco.MjModel`` is drawn: the grid spacing
    is not used by the physics, and the cameras' model is their own copy.
    """
    import mujoco

    planes = model.geom_type == mujoco.mjtGeom.mjGEOM_PLANE
    spacing = model.geom_size[:, 2]
    fine = planes & (spacing > 0) & (spacing < RENDER_PLANE_GRID_M)
    model.geom_size[fine, 2] = RENDER_PLANE_GRID_M


def camera_scene_option() -> Any:
    """A ``mujoco.MjvOption`` for camera images: marker sites (such as grip
    sites) and the cameras' own housings are hidden."""
    import mujoco

    option = mujoco.MjvOption()
    option.sitegroup[:] = 0
    option.geomgroup[CAMERA_HOUSING_GROUP] = 0
    return option


def set_render_flags(scene: Any, shadows: bool) -> None:
    """Turns shadows and reflections of a ``mujoco.MjvScene`` on or off together."""
    import mujoco

    scene.flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(shadows)
    scene.flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = int(shadows)


def distort_image(image: np.ndarray, maps: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The ideal (pinhole) render warped by ``camera_intrinsics.distortion_maps`` (bilinear)."""
    import cv2

    return cv2.remap(image, *maps, interpolation=cv2.INTER_LINEAR)


def camera_frame_metadata(
    name: str, intr: CameraIntrinsics, stamp_ns: int, render_ns: int, oldest_state_stamp_ns: int,
    encoding: str = "rgb8",
) -> dict[str, Any]:
    """dora metadata of one published camera image.

    Args:
        name: The camera.
        intr: Its intrinsics (size, pinhole, distortion).
        stamp_ns: The newest measurement time that went into the pose shown.
        render_ns: Host time of the render.
        oldest_state_stamp_ns: The oldest measurement time that went into the pose.
        encoding: ``rgb8`` (raw pixels) or ``jpeg``.
    """
    meta = image_metadata(
        width=intr.width,
        height=intr.height,
        encoding=encoding,
        camera=name,
        stamp_ns=stamp_ns,
        fx=intr.fx,
        fy=intr.fy,
        cx=intr.cx,
        cy=intr.cy,
    )
    meta.update(
        distortion_model=DISTORTION_MODEL,
        distortion=list(intr.distortion),
        frame_id=f"{name}_optical",
        render_ns=int(render_ns),
        capture_ns=int(render_ns),  # when the pixels were made: a real camera's capture stamp
        oldest_state_stamp_ns=oldest_state_stamp_ns,
    )
    return meta


def camera_frame(
    image: np.ndarray, name: str, intr: CameraIntrinsics, stamp_ns: int, render_ns: int,
    oldest_state_stamp_ns: int, jpeg_quality: int | None = None,
) -> tuple[pa.Array, dict[str, Any]]:
    """The value and metadata of one rendered (H, W, 3) RGB image: the JPEG at
    ``jpeg_quality`` (what a robot camera sends, 10-20 times smaller), or with
    None the raw pixels."""
    if image.shape != (intr.height, intr.width, 3):
        raise ValueError(f"camera {name}: rendered {image.shape}, intrinsics say {intr.height}x{intr.width}x3")
    if jpeg_quality is None:
        value, encoding = np.ascontiguousarray(image).reshape(-1), "rgb8"
    else:
        value, encoding = encode_jpeg(image, jpeg_quality), JPEG
    meta = camera_frame_metadata(name, intr, stamp_ns, render_ns, oldest_state_stamp_ns, encoding)
    return pa.array(value, type=pa.uint8()), meta
