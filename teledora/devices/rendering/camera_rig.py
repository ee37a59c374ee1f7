"""The robot's cameras rendered offscreen by MuJoCo from a kinematic model:
the sim camera device that the renderer node and `teledora video` share.

:class:`CameraRig` loads the model, sets its joints' positions (no physics is
stepped) and renders each configured camera with its intrinsics and lens
distortion; :func:`resolve_model` finds the MJCF to load (a URDF is converted
on the fly), :func:`passive_viewer` opens MuJoCo's window on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from teledora import models
from teledora.operators.rendering.camera_intrinsics import (
    CameraSettings,
    RendererConfig,
    distortion_maps,
)
from teledora.operators.rendering.camera_rendering import (
    camera_scene_option,
    distort_image,
    prepare_camera_model,
    set_render_flags,
)


class CameraRig:
    """The kinematic model and one offscreen renderer per image size.

    Reading the model file and owning GL contexts stay here; how the model is
    set up for the cameras is ``operators/rendering/camera_rendering.py``.

    Args:
        model_path: MJCF file holding the robot (and its room).
        config: Renderer settings.
        cameras: The cameras to render; each must exist in the model.
    """

    def __init__(self, model_path: Path, config: RendererConfig, cameras: Sequence[CameraSettings]) -> None:
        import mujoco

        self.mujoco = mujoco
        self.model = mujoco.MjModel.from_xml_path(str(model_path))
        self.data = mujoco.MjData(self.model)
        self.cameras = {c.name: c for c in cameras}
        self.intrinsics = {c.name: c.intrinsics() for c in cameras}
        self._cam_id = prepare_camera_model(self.model, config, cameras, str(model_path))
        self.shadows = config.shadows
        self._renderers: dict[tuple[int, int], Any] = {}  # one GL context per image size
        self._scene_option = camera_scene_option()
        self._maps = {n: distortion_maps(i) for n, i in self.intrinsics.items() if i.distorted}
        mujoco.mj_forward(self.model, self.data)

    def forward(self) -> None:
        """Kinematics only: body, site and camera poses from qpos (no physics step)."""
        self.mujoco.mj_forward(self.model, self.data)

    def render(self, name: str) -> np.ndarray:
        """(H, W, 3) uint8 RGB image of camera ``name`` at the current pose."""
        cam = self.cameras[name]
        key = (cam.width, cam.height)
        if key not in self._renderers:
            self._renderers[key] = self.mujoco.Renderer(self.model, cam.height, cam.width)
        renderer = self._renderers[key]
        renderer.update_scene(self.data, self._cam_id[name], self._scene_option)
        set_render_flags(renderer.scene, self.shadows)
        image = renderer.render()
        if name in self._maps:
            image = distort_image(image, self._maps[name])
        return image

    def close(self) -> None:
        for r in self._renderers.values():
            r.close()
        self._renderers.clear()


def resolve_model(path: str, log: Callable[[str, str], None] | None = None) -> Path:
    """The MJCF to load: a shipped name, a file, or a URDF converted on the fly
    (as `teledora model import` would, into a temporary folder)."""
    p = Path(path)
    p = p if p.is_absolute() or p.exists() else models.path(path)
    if p.suffix.lower() != ".urdf":
        return p
    import tempfile

    from teledora.models.urdf_conversion import ImportOptions, convert_urdf

    out = Path(tempfile.mkdtemp(prefix="teledora-renderer-")) / f"{p.stem}.xml"
    report = convert_urdf(p, out, ImportOptions())
    for line in report.lines():
        if log is not None and not line.startswith("mesh "):
            log("info", f"URDF import: {line}")
    return out


def passive_viewer(model: Any, data: Any) -> Any:
    import mujoco.viewer

    return mujoco.viewer.launch_passive(model, data, show_left_ui=False, show_right_ui=False)
