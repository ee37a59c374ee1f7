"""The robot's shapes and body poses from its MuJoCo model, as plain arrays.

:func:`model_shapes` lists every visible geom of the model as a :class:`Shape`
(a box, capsule, cylinder, sphere or ellipsoid with its size, or a mesh with
its vertices and faces) attached to a body; the world body's geoms are the
room. :class:`RobotPoser` sets the model's joints from reported states (the
arms by joint name, the lift height, the base's planar odometry), runs MuJoCo's
forward kinematics only (no physics step) and returns every body's and named
site's world pose. Planes (the floor) are left out: a viewer draws its own grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from teledora.operators.errors import ConfigError

# mjtGeom values (stable across MuJoCo releases)
_PLANE, _HFIELD, _SPHERE, _CAPSULE, _ELLIPSOID, _CYLINDER, _BOX, _MESH = 0, 1, 2, 3, 4, 5, 6, 7
_KINDS = {_SPHERE: "sphere", _CAPSULE: "capsule", _ELLIPSOID: "ellipsoid", _CYLINDER: "cylinder", _BOX: "box", _MESH: "mesh"}


@dataclass(frozen=True)
class Shape:
    """One geom, in its body's frame.

    Attributes:
        name: Geom name, or ``geom<i>`` when the model leaves it unnamed.
        body: Name of the body it is fixed to (``world`` for the room).
        kind: ``box``, ``capsule``, ``cylinder``, ``sphere``, ``ellipsoid`` or ``mesh``.
        size: MuJoCo's size vector (half extents for a box, radius and half
            length for capsules and cylinders, radii for an ellipsoid).
        position: Offset from the body frame (m).
        quaternion_xyzw: Rotation from the body frame.
        rgba: Colour, 0..1.
        vertices: Mesh vertices in the geom frame (``mesh`` only), else None.
        faces: Mesh triangles (vertex indices), else None.
    """

    name: str
    body: str
    kind: str
    size: np.ndarray
    position: np.ndarray
    quaternion_xyzw: np.ndarray
    rgba: np.ndarray
    vertices: np.ndarray | None = None
    faces: np.ndarray | None = None


def wxyz_to_xyzw(q: Sequence[float]) -> np.ndarray:
    return np.array([q[1], q[2], q[3], q[0]], dtype=float)


def model_shapes(model: Any, visible_groups: Sequence[int] = (0, 1, 2)) -> list[Shape]:
    """Every visible geom (in one of ``visible_groups``, alpha > 0) of ``model``, planes and height fields excepted."""
    import mujoco

    shapes = []
    for g in range(model.ngeom):
        kind = _KINDS.get(int(model.geom_type[g]))
        if kind is None or int(model.geom_group[g]) not in visible_groups or float(model.geom_rgba[g][3]) <= 0.0:
            continue
        body = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, int(model.geom_bodyid[g])) or f"body{int(model.geom_bodyid[g])}"
        name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_GEOM, g) or f"geom{g}"
        vertices = faces = None
        if kind == "mesh":
            m = int(model.geom_dataid[g])
            v0, nv = int(model.mesh_vertadr[m]), int(model.mesh_vertnum[m])
            f0, nf = int(model.mesh_faceadr[m]), int(model.mesh_facenum[m])
            vertices = np.array(model.mesh_vert[v0:v0 + nv], dtype=np.float32)
            faces = np.array(model.mesh_face[f0:f0 + nf], dtype=np.uint32)
        shapes.append(Shape(name, body, kind, np.array(model.geom_size[g], dtype=float), np.array(model.geom_pos[g], dtype=float),
                            wxyz_to_xyzw(model.geom_quat[g]), np.array(model.geom_rgba[g], dtype=float), vertices, faces))
    return shapes


@dataclass(frozen=True)
class Pose:
    """A world pose: position (m) and rotation quaternion (x, y, z, w)."""

    position: np.ndarray
    quaternion_xyzw: np.ndarray


class RobotPoser:
    """Forward kinematics of the robot model from reported states.

    Args:
        model: ``mujoco.MjModel`` of the robot (the scene may include the room).
        base_joints: Names of the base's x, y and yaw joints.
        lift_joint: Name of the lift's slide joint.
        base_yaw_offset_rad: Model yaw = odometry yaw + this.

    Raises:
        ConfigError: the model lacks one of the named joints.
    """

    def __init__(self, model: Any, base_joints: Sequence[str], lift_joint: str, base_yaw_offset_rad: float) -> None:
        import mujoco

        from teledora.operators.model.joint_state_mapping import qpos_addresses

        self.model = model
        self.data = mujoco.MjData(model)
        self.addresses = qpos_addresses(model)
        missing = [j for j in (*base_joints, lift_joint) if j not in self.addresses]
        if len(base_joints) != 3 or missing:
            raise ConfigError(f"robot model lacks joints {missing} (base_joints must name x, y, yaw)")
        self.base_joints = tuple(base_joints)
        self.lift_joint = lift_joint
        self.yaw_offset = float(base_yaw_offset_rad)
        self.bodies = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_BODY, b) or f"body{b}" for b in range(model.nbody)]
        self.sites = [mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_SITE, s) or f"site{s}" for s in range(model.nsite)]
        self._dirty = True

    def set_joints(self, names: Sequence[str], positions: Sequence[float]) -> int:
        """Sets the named joints the model has (others are ignored); returns how many were set."""
        n = 0
        for name, value in zip(names, positions):
            adr = self.addresses.get(name)
            if adr is not None and np.isfinite(value):
                self.data.qpos[adr] = float(value)
                n += 1
        self._dirty = True
        return n

    def set_lift(self, joint_value: float) -> None:
        self.data.qpos[self.addresses[self.lift_joint]] = float(joint_value)
        self._dirty = True

    def set_base(self, x: float, y: float, yaw: float) -> None:
        for name, value in zip(self.base_joints, (x, y, yaw + self.yaw_offset)):
            self.data.qpos[self.addresses[name]] = float(value)
        self._dirty = True

    def _forward(self) -> None:
        if self._dirty:
            import mujoco

            mujoco.mj_kinematics(self.model, self.data)
            self._dirty = False

    def body_poses(self, skip_world: bool = True) -> dict[str, Pose]:
        """World pose of every body (the world body left out unless asked)."""
        self._forward()
        return {name: Pose(self.data.xpos[b].copy(), wxyz_to_xyzw(self.data.xquat[b]))
                for b, name in enumerate(self.bodies) if not (skip_world and b == 0)}

    def site_poses(self, names: Sequence[str] | None = None) -> dict[str, Pose]:
        """World pose of the named sites (all when None); unknown names are left out."""
        import mujoco

        self._forward()
        out = {}
        for s, name in enumerate(self.sites):
            if names is not None and name not in names:
                continue
            q = np.empty(4)
            mujoco.mju_mat2Quat(q, self.data.site_xmat[s])
            out[name] = Pose(self.data.site_xpos[s].copy(), wxyz_to_xyzw(q))
        return out


def bodies_to_show(shapes: Sequence[Shape]) -> list[str]:
    """Bodies with at least one shape, the world (room) excepted, in model order."""
    seen: list[str] = []
    for s in shapes:
        if s.body != "world" and s.body not in seen:
            seen.append(s.body)
    return seen


def shapes_by_body(shapes: Sequence[Shape]) -> Mapping[str, list[Shape]]:
    out: dict[str, list[Shape]] = {}
    for s in shapes:
        out.setdefault(s.body, []).append(s)
    return out
