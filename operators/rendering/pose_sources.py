"""Which reported state sets each joint group of the rendered robot, and the
checked joint values one state message gives those groups.

The renderer shows four joint groups: the two arms, the lift and the base. Each
of the three kinds of group (``arms``, ``lift``, ``base``) has one configured
source (``sources:`` in renderer.yaml): the robot's own state topic
(``joint_states``, ``lift``, ``odom``) or ``ground_truth``, which carries every
group at once. A group's state arriving on another source is ignored, never
mixed in, and reported once per group.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from teledora.operators.rendering.camera_intrinsics import RendererConfig
from teledora.operators.model.joint_state_mapping import JointGroup, JointStateError, JointStateMapping

_ARMS = ("left_arm", "right_arm")


def joint_groups(profile: Any, config: RendererConfig) -> list[JointGroup]:
    """The rendered robot's joint groups: each arm (with its gripper), the lift and the base."""
    return [
        JointGroup("left_arm", profile.arms["left"].all_joints),
        JointGroup("right_arm", profile.arms["right"].all_joints),
        JointGroup("lift", (config.model.lift_joint,)),
        JointGroup("base", tuple(config.model.base_joints)),
    ]


class PoseSources:
    """Turns one decoded state message into checked group values, taking each
    group only from its configured source.

    Args:
        mapping: The model's joint mapping over :func:`joint_groups`.
        config: Renderer settings: the source of each group, the lift and base
            joint names and the base yaw offset.
        lift_height_to_joint: Lift height (m, as reported) to the lift joint's position.
        on_second_source: Called with a warning the first time a group's state
            arrives on a source that is not the configured one.
    """

    def __init__(
        self,
        mapping: JointStateMapping,
        config: RendererConfig,
        lift_height_to_joint: Callable[[float], float],
        on_second_source: Callable[[str], None],
    ) -> None:
        self.mapping = mapping
        self.config = config
        self.lift_height_to_joint = lift_height_to_joint
        self.on_second_source = on_second_source
        self._warned: set[str] = set()

    def uses(self, group: str, source: str) -> bool:
        """True when ``group`` (``arms``, ``lift`` or ``base``) is taken from ``source``."""
        if self.config.sources[group] == source:
            return True
        if group not in self._warned:
            self._warned.add(group)
            self.on_second_source(
                f"{group} state arrives on {source!r} too; using {self.config.sources[group]!r} (sources.{group})"
            )
        return False

    def groups_from(self, source: str, msg: Mapping[str, Any]) -> dict[str, dict[str, float]]:
        """``{group: {joint: value}}`` from a message of input ``source``; empty
        when none of its groups is taken from that source.

        Raises:
            JointStateError: the message must be rejected whole (see
                :meth:`JointStateMapping.check`), or ground truth names joints
                the model does not have.
        """
        m = self.mapping
        model = self.config.model
        out: dict[str, dict[str, float]] = {}
        if source == "joint_states" and self.uses("arms", source):
            out.update(m.check(msg["names"], msg["position"], allowed_groups=_ARMS))
        elif source == "lift" and self.uses("lift", source):
            out.update(m.check([model.lift_joint], [self.lift_height_to_joint(msg["height_m"])]))
        elif source == "odom" and self.uses("base", source):
            out.update(m.check(model.base_joints, self.base_values(msg)))
        elif source == "ground_truth":
            names, values = msg["joint_names"], msg["joint_position"]
            unknown = sorted(n for n in names if n not in m.addresses)
            if unknown:
                raise JointStateError(f"unknown joint names {unknown}")
            if self.uses("arms", source):
                # ground truth may list every model joint: the arms take only theirs
                keep = [i for i, n in enumerate(names) if m.group_of(n) in _ARMS]
                out.update(m.check([names[i] for i in keep], values[keep], allowed_groups=_ARMS))
            if self.uses("lift", source):
                h = self.lift_height_to_joint(msg["lift_height_m"])
                out.update(m.check([model.lift_joint], [h]))
            if self.uses("base", source):
                out.update(m.check(model.base_joints, self.base_values(msg)))
        return out

    def base_values(self, msg: Mapping[str, Any]) -> list[float]:
        """Base joint positions (x, y, yaw) from a planar pose; the yaw offset
        turns the reported heading into the model's base joint angle."""
        return [msg["x"], msg["y"], msg["yaw"] + self.config.model.base_yaw_offset_rad]
