"""Self-filter from the robot model: which scan returns fall on the robot's own bodies.

The robot's geoms (every geom of the base body's subtree, collision and
visual alike: the sim lidar's rays hit both) are posed from the current
joint positions (arms, grippers, lift) with the base joints at zero, so the
base body frame is the frame the returns are tested in. A return hits the
robot when its 3D point, at its lidar's mount height, lies inside a geom
grown by ``padding_m``. Spheres, capsules, cylinders and boxes are tested
exactly; other shapes (meshes, ellipsoids, planes) by their bounding sphere.

Pure computation on a MuJoCo model already in memory: loading it is the
caller's job.
"""

from __future__ import annotations

from typing import Sequence

import mujoco
import numpy as np
import numpy.typing as npt

from teledora.operators.errors import TeledoraError

_SPHERE, _CAPSULE, _CYLINDER, _BOX = (
    int(mujoco.mjtGeom.mjGEOM_SPHERE),
    int(mujoco.mjtGeom.mjGEOM_CAPSULE),
    int(mujoco.mjtGeom.mjGEOM_CYLINDER),
    int(mujoco.mjtGeom.mjGEOM_BOX),
)


class BodyFilterError(TeledoraError, KeyError):
    """The model lacks the named base body."""


def _subtree(model: mujoco.MjModel, root: int) -> set[int]:
    bodies = {root}
    for b in range(root + 1, model.nbody):
        if int(model.body_parentid[b]) in bodies:
            bodies.add(b)
    return bodies


class RobotBodyFilter:
    """Tests base-frame points against the robot's geoms at the current joint positions.

    Args:
        model: The robot model (MJCF with the base joints and the arm/lift joints).
        padding_m: Margin around every geom.
        base_body: The body whose frame the points are given in (the profile's base frame).
        base_joints: Joints that move the base in the world (the profile's); held at zero.
    """

    def __init__(self, model: mujoco.MjModel, padding_m: float, base_body: str, base_joints: Sequence[str]) -> None:
        if padding_m < 0:
            raise ValueError("padding_m must be >= 0")
        self.model = model
        self.data = mujoco.MjData(model)
        self.padding_m = float(padding_m)
        self._base = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, base_body)
        if self._base < 0:
            raise BodyFilterError(f"model has no body {base_body!r}")
        bodies = _subtree(model, self._base)
        self.geoms = np.array([g for g in range(model.ngeom) if int(model.geom_bodyid[g]) in bodies], dtype=np.int64)
        self._joint_qpos: dict[str, int] = {}
        for j in range(model.njnt):
            name = mujoco.mj_id2name(model, mujoco.mjtObj.mjOBJ_JOINT, j)
            if name and name not in base_joints and int(model.jnt_type[j]) in (
                int(mujoco.mjtJoint.mjJNT_HINGE), int(mujoco.mjtJoint.mjJNT_SLIDE)
            ):
                self._joint_qpos[name] = int(model.jnt_qposadr[j])
        self._posed = False
        self.unknown_joints = 0

    @property
    def joint_names(self) -> list[str]:
        return list(self._joint_qpos)

    def set_joints(self, names: Sequence[str], positions: npt.ArrayLike) -> int:
        """Sets joint positions by name; returns (and counts) names the model lacks."""
        q = np.asarray(positions, dtype=np.float64)
        unknown = 0
        for name, value in zip(names, q):
            adr = self._joint_qpos.get(str(name))
            if adr is None or not np.isfinite(value):
                unknown += 1
                continue
            if self.data.qpos[adr] != value:
                self.data.qpos[adr] = value
                self._posed = False
        self.unknown_joints += unknown
        return unknown

    def _pose(self) -> None:
        if self._posed:
            return
        mujoco.mj_kinematics(self.model, self.data)
        rb = self.data.xmat[self._base].reshape(3, 3)
        pb = self.data.xpos[self._base]
        g = self.geoms
        xpos = self.data.geom_xpos[g]  # (G, 3)
        xmat = self.data.geom_xmat[g].reshape(-1, 3, 3)  # geom -> world
        self._centre = (xpos - pb) @ rb  # in the base frame
        self._rot = np.einsum("ji,gjk->gik", rb, xmat)  # geom -> base
        self._type = self.model.geom_type[g].astype(np.int64)
        self._size = self.model.geom_size[g].astype(np.float64)
        self._rbound = self.model.geom_rbound[g].astype(np.float64)
        self._posed = True

    def geom_centres(self) -> np.ndarray:
        """Centres (G, 3) of the filtered geoms in the base frame at the current pose."""
        self._pose()
        return self._centre.copy()

    def contains(self, x: npt.ArrayLike, y: npt.ArrayLike, z: float) -> np.ndarray:
        """Mask of base-frame points (x, y, at height z) inside some padded robot geom."""
        self._pose()
        px = np.asarray(x, dtype=np.float64)
        py = np.asarray(y, dtype=np.float64)
        out = np.zeros(px.shape, dtype=bool)
        if px.size == 0 or self.geoms.size == 0:
            return out
        pad = self.padding_m
        reach = self._rbound + pad
        # geoms that do not reach the scan plane cannot be hit
        cand = np.nonzero(np.abs(self._centre[:, 2] - z) <= reach)[0]
        with np.errstate(invalid="ignore"):
            for gi in cand:
                c = self._centre[gi]
                near = np.hypot(px - c[0], py - c[1]) <= reach[gi]
                if not np.any(near):
                    continue
                d = np.stack([px[near] - c[0], py[near] - c[1], np.full(int(near.sum()), z - c[2])], axis=1)
                local = d @ self._rot[gi]  # base -> geom frame
                t, s = int(self._type[gi]), self._size[gi]
                if t == _BOX:
                    hit = np.all(np.abs(local) <= s + pad, axis=1)
                elif t == _CAPSULE:
                    zc = np.clip(local[:, 2], -s[1], s[1])
                    hit = np.hypot(np.hypot(local[:, 0], local[:, 1]), local[:, 2] - zc) <= s[0] + pad
                elif t == _CYLINDER:
                    hit = (np.hypot(local[:, 0], local[:, 1]) <= s[0] + pad) & (np.abs(local[:, 2]) <= s[1] + pad)
                elif t == _SPHERE:
                    hit = np.linalg.norm(local, axis=1) <= s[0] + pad
                else:
                    hit = np.linalg.norm(local, axis=1) <= reach[gi]
                idx = np.nonzero(near)[0]
                out[idx[hit]] = True
        return out
