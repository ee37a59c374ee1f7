"""The robot model the view draws: the renderer's model binding (renderer.yaml)
loaded into MuJoCo, with the robot profile's lift mapping."""

from __future__ import annotations

from typing import Any

from teledora.devices.rendering.camera_rig import resolve_model
from teledora.operators.viewing.robot_geometry import RobotPoser, model_shapes
from teledora.operators.viewing.view_mapping import RobotBinding


def load_robot_binding(renderer_config: Any, profile: Any, model_path: str | None = None) -> RobotBinding:
    """The robot of ``renderer_config.model`` (or ``model_path``) as a :class:`RobotBinding`."""
    import mujoco

    model = mujoco.MjModel.from_xml_path(str(resolve_model(model_path or renderer_config.model.path)))
    binding = renderer_config.model
    poser = RobotPoser(model, binding.base_joints, binding.lift_joint, binding.base_yaw_offset_rad)
    return RobotBinding(poser, model_shapes(model), profile.lift_height_to_joint)
