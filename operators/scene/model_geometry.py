"""A MuJoCo model's geoms as viewer primitives, grouped by the body (frame)
they move with.

Boxes, spheres, ellipsoids and cylinders map one to one; a capsule becomes a
cylinder with a sphere at each end; a plane becomes a 1 mm thick slab (10 m
square when the model leaves it infinite); a mesh becomes a triangle list in
its geom's frame. Only geoms in groups 0–2 are kept: the model puts its
collision-only stand-ins in group 3, which MuJoCo's own viewer hides too.
Height fields and signed-distance geoms are left out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import mujoco
import numpy as np

from teledora.operators.geometry import quat_multiply, quat_normalize, wxyz_to_xyzw

VISIBLE_GROUPS = (0, 1, 2)
_INFINITE_PLANE_M = 10.0
_PLANE_THICKNESS_M = 0.001


@dataclass(frozen=True)
class Primitive:
    """One shape in its body's frame.

    ``kind`` is ``cube``, ``sphere``, ``cylinder`` or ``triangles``; ``size``
    is the full extent (x, y, z) in metres (a cylinder's x and y are its
    diameter, z its height, along its z axis); ``points`` holds a triangle
    list's vertices, three per triangle, in the primitive's pose.
    """

    kind: str
    name: str
    position: tuple[float, float, float]
    rotation: tuple[float, float, float, float]
    size: tuple[float, float, float]
    rgba: tuple[float, float, float, float]
    points: np.ndarray | None = None


@dataclass
class BodyShapes:
    """The primitives of one body, expressed in that body's frame."""

    frame: str
    primitives: list[Primitive] = field(default_factory=list)


def _rgba(model: mujoco.MjModel, g: int) -> tuple[float, float, float, float]:
    mat = int(model.geom_matid[g])
    rgba = model.mat_rgba[mat] if mat >= 0 else model.geom_rgba[g]
    return tuple(float(v) for v in rgba)  # type: ignore[return-value]


def _geom_name(model: mujoco.MjModel, g: int) -> str:
    return model.geom(g).name or f"geom{g}"


def geom_primitives(model: mujoco.MjModel, g: int) -> list[Primitive]:
    """The primitives of geom ``g`` in its body's frame (empty for kinds not drawn)."""
    kind = int(model.geom_type[g])
    size = model.geom_size[g]
    pos = tuple(float(v) for v in model.geom_pos[g])
    quat = wxyz_to_xyzw(model.geom_quat[g])
    rot = tuple(float(v) for v in quat)
    rgba = _rgba(model, g)
    name = _geom_name(model, g)
    t = mujoco.mjtGeom
    if kind == t.mjGEOM_BOX:
        return [Primitive("cube", name, pos, rot, tuple(float(2 * s) for s in size), rgba)]  # type: ignore[arg-type]
    if kind == t.mjGEOM_SPHERE:
        d = float(2 * size[0])
        return [Primitive("sphere", name, pos, rot, (d, d, d), rgba)]
    if kind == t.mjGEOM_ELLIPSOID:
        return [Primitive("sphere", name, pos, rot, tuple(float(2 * s) for s in size), rgba)]  # type: ignore[arg-type]
    if kind == t.mjGEOM_CYLINDER:
        d = float(2 * size[0])
        return [Primitive("cylinder", name, pos, rot, (d, d, float(2 * size[1])), rgba)]
    if kind == t.mjGEOM_CAPSULE:
        r, half = float(size[0]), float(size[1])
        axis = np.asarray(_rotate(quat, (0.0, 0.0, 1.0)))
        ends = [tuple(float(v) for v in np.asarray(pos) + sgn * half * axis) for sgn in (1.0, -1.0)]
        return [Primitive("cylinder", name, pos, rot, (2 * r, 2 * r, 2 * half), rgba)] + [
            Primitive("sphere", f"{name}_end{i}", e, rot, (2 * r, 2 * r, 2 * r), rgba) for i, e in enumerate(ends)  # type: ignore[arg-type]
        ]
    if kind == t.mjGEOM_PLANE:
        sx = float(2 * size[0]) if size[0] > 0 else _INFINITE_PLANE_M
        sy = float(2 * size[1]) if size[1] > 0 else _INFINITE_PLANE_M
        below = tuple(float(v) for v in np.asarray(pos) - 0.5 * _PLANE_THICKNESS_M * np.asarray(_rotate(quat, (0.0, 0.0, 1.0))))
        return [Primitive("cube", name, below, rot, (sx, sy, _PLANE_THICKNESS_M), rgba)]  # type: ignore[arg-type]
    if kind == t.mjGEOM_MESH:
        mesh = int(model.geom_dataid[g])
        v0, nv = int(model.mesh_vertadr[mesh]), int(model.mesh_vertnum[mesh])
        f0, nf = int(model.mesh_faceadr[mesh]), int(model.mesh_facenum[mesh])
        verts = model.mesh_vert[v0 : v0 + nv]
        faces = model.mesh_face[f0 : f0 + nf]
        points = verts[faces.reshape(-1)].astype(np.float64)
        return [Primitive("triangles", name, pos, rot, (1.0, 1.0, 1.0), rgba, points)]
    return []


def _rotate(q_xyzw: np.ndarray, v: tuple[float, float, float]) -> np.ndarray:
    qv = np.array([v[0], v[1], v[2], 0.0])
    conj = np.array([-q_xyzw[0], -q_xyzw[1], -q_xyzw[2], q_xyzw[3]])
    return quat_multiply(quat_multiply(quat_normalize(q_xyzw), qv), conj)[:3]


def body_shapes(model: mujoco.MjModel, bodies: list[int] | None = None) -> list[BodyShapes]:
    """Visible primitives per body (all bodies when ``bodies`` is None), each
    body that has any; body 0 is the frame ``world``."""
    chosen = range(model.nbody) if bodies is None else bodies
    out = []
    for b in chosen:
        shapes = BodyShapes(model.body(b).name)
        for g in range(int(model.body_geomadr[b]), int(model.body_geomadr[b] + model.body_geomnum[b])):
            if int(model.geom_group[g]) in VISIBLE_GROUPS:
                shapes.primitives.extend(geom_primitives(model, g))
        if shapes.primitives:
            out.append(shapes)
    return out
