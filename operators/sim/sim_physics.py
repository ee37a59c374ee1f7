"""MuJoCo physics of the AlohaMini2: arms, grippers and lift under position
actuators, a kinematic planar base. Pure computation on an ``MjModel`` the
caller loaded; time advances only through :meth:`SimPhysics.step`."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import mujoco
import numpy as np

from teledora.operators.contract.messages import MessageError, require_joint_names
from teledora.operators.geometry import wrap_angle
from teledora.operators.model.robot_profile import RobotProfile


class SimPhysics:
    """Steps the robot model and reads back joint states and ground truth.

    Args:
        model: The scene or robot model (must contain the profile's joints and
            position actuators named after the joints they drive).
        profile: The robot profile.
        initial_lift_height_m: Lift height at start (driver convention, 0 = floor).
    """

    def __init__(self, model: mujoco.MjModel, profile: RobotProfile, initial_lift_height_m: float = 0.0) -> None:
        self.model = model
        self.data = mujoco.MjData(model)
        self.profile = profile
        self.arm_joints = profile.arm_joint_names
        self._qadr = np.array([model.joint(j).qposadr[0] for j in self.arm_joints])
        self._vadr = np.array([model.joint(j).dofadr[0] for j in self.arm_joints])
        self._act = np.array([model.actuator(j).id for j in self.arm_joints])
        kp = model.actuator_gainprm[self._act, 0]
        kv = -model.actuator_biasprm[self._act, 2]
        if np.any(kp <= 0):
            raise ValueError("arm actuators must be position actuators with kp > 0")
        self._kv_over_kp = kv / kp
        self._ctrl_lo = model.actuator_ctrlrange[self._act, 0]
        self._ctrl_hi = model.actuator_ctrlrange[self._act, 1]
        self._lift_q = model.joint(profile.lift_joint).qposadr[0]
        self._lift_v = model.joint(profile.lift_joint).dofadr[0]
        self._lift_act = model.actuator(profile.lift_joint).id
        bx, by, byaw = (model.joint(j) for j in profile.base_joints)
        self._base_q = np.array([bx.qposadr[0], by.qposadr[0], byaw.qposadr[0]])
        self._base_v = np.array([bx.dofadr[0], by.dofadr[0], byaw.dofadr[0]])
        self._twist_body = np.zeros(3)  # vx, vy, wz in base frame

        home = profile.home_q()
        q0 = np.array([home[j] for j in self.arm_joints])
        self.data.qpos[self._qadr] = q0
        self.data.ctrl[self._act] = q0
        lift_q = profile.lift_height_to_joint(initial_lift_height_m)
        self.data.qpos[self._lift_q] = lift_q
        self.data.ctrl[self._lift_act] = lift_q
        mujoco.mj_forward(model, self.data)

    @property
    def time_s(self) -> float:
        return float(self.data.time)

    @property
    def kv_over_kp(self) -> np.ndarray:
        return self._kv_over_kp.copy()

    def command_joints(self, names: Sequence[str], q_ref: Sequence[float], dq_ref: Sequence[float]) -> None:
        """Applies a name-addressed joint command: actuator input
        ``q_ref + (kv/kp) * dq_ref``, clipped to the control range.

        Raises:
            MessageError: unknown or duplicate names (nothing is applied).
        """
        require_joint_names(names, self.arm_joints, subset_ok=True)
        index = {j: i for i, j in enumerate(self.arm_joints)}
        idx = np.array([index[n] for n in names], dtype=int)
        q = np.asarray(q_ref, dtype=float)
        dq = np.asarray(dq_ref, dtype=float)
        if q.shape != (len(names),) or dq.shape != (len(names),):
            raise MessageError("q_ref and dq_ref must match names in length")
        u = q + self._kv_over_kp[idx] * dq
        self.data.ctrl[self._act[idx]] = np.clip(u, self._ctrl_lo[idx], self._ctrl_hi[idx])

    def set_lift_height(self, height_m: float) -> None:
        """Lift target in the driver convention (0 = floor-homed)."""
        lo, hi = self.model.actuator_ctrlrange[self._lift_act]
        self.data.ctrl[self._lift_act] = float(np.clip(self.profile.lift_height_to_joint(height_m), lo, hi))

    def set_base(self, x: float, y: float, yaw: float, vx: float, vy: float, wz: float) -> None:
        """Places the kinematic base (odom pose) and sets the twist it keeps
        moving with until the next call (body-frame vx, vy, wz)."""
        self.data.qpos[self._base_q] = (x, y, yaw)
        self._twist_body[:] = (vx, vy, wz)
        self._apply_base_velocity()

    def _apply_base_velocity(self) -> None:
        yaw = self.data.qpos[self._base_q[2]]
        c, s = np.cos(yaw), np.sin(yaw)
        vx, vy, wz = self._twist_body
        self.data.qvel[self._base_v] = (c * vx - s * vy, s * vx + c * vy, wz)

    def step(self, n: int = 1) -> None:
        """Advances physics by ``n`` timesteps; the base moves at its set twist.

        The base bookkeeping runs on Python floats (``math``) and plain
        indices: numpy's per-call overhead on three-element arrays cost twice
        what ``mj_step`` itself does for this model."""
        if n <= 0:
            return
        model, data = self.model, self.data
        qpos, qvel = data.qpos, data.qvel
        ix, iy, iyaw = (int(i) for i in self._base_q)
        jx, jy, jyaw = (int(i) for i in self._base_v)
        vx, vy, wz = (float(v) for v in self._twist_body)
        dt = float(model.opt.timestep)
        turning = abs(wz) > 1e-12
        dyaw = wz * dt
        yaw = float(qpos[iyaw])
        c, s = math.cos(yaw), math.sin(yaw)
        qvel[jx], qvel[jy], qvel[jyaw] = c * vx - s * vy, s * vx + c * vy, wz
        for _ in range(n):
            x, y = float(qpos[ix]), float(qpos[iy])
            mujoco.mj_step(model, data)
            # the base is kinematic: overwrite whatever contact forces did to it
            if turning:
                # exact constant-twist SE(2) update
                s1, c1 = math.sin(yaw + dyaw), math.cos(yaw + dyaw)
                sx = (s1 - s) / wz
                sy = (c - c1) / wz
                x += vx * sx - vy * sy
                y += vx * sy + vy * sx
                yaw = yaw + dyaw
                c, s = c1, s1
            else:
                x += (c * vx - s * vy) * dt
                y += (s * vx + c * vy) * dt
            qpos[ix], qpos[iy], qpos[iyaw] = x, y, yaw
            qvel[jx], qvel[jy], qvel[jyaw] = c * vx - s * vy, s * vx + c * vy, wz

    def joint_state(self) -> dict[str, Any]:
        """Arm and gripper joints: position, velocity, actuator effort (N·m)."""
        return {
            "names": list(self.arm_joints),
            "position": self.data.qpos[self._qadr].copy(),
            "velocity": self.data.qvel[self._vadr].copy(),
            "effort": self.data.actuator_force[self._act].copy(),
        }

    def lift_height_m(self) -> float:
        return self.profile.lift_joint_to_height(float(self.data.qpos[self._lift_q]))

    def ground_truth(self) -> dict[str, Any]:
        """Base pose and body twist in the world, lift height and arm joints."""
        x, y, yaw = self.data.qpos[self._base_q]
        vx, vy, wz = self._twist_body
        js = self.joint_state()
        return {
            "frame_id": self.profile.world_frame,
            "x": float(x),
            "y": float(y),
            "yaw": wrap_angle(float(yaw)),
            "vx": float(vx),
            "vy": float(vy),
            "wz": float(wz),
            "lift_height_m": self.lift_height_m(),
            "joint_names": js["names"],
            "joint_position": js["position"],
            "joint_velocity": js["velocity"],
        }

    def object_names(self) -> list[str]:
        """The scene's free bodies (the objects to grasp), in model order."""
        free = mujoco.mjtJoint.mjJNT_FREE
        return [self.model.body(self.model.jnt_bodyid[j]).name for j in range(self.model.njnt) if self.model.jnt_type[j] == free]

    def object_poses(self) -> dict[str, Any]:
        """World position (m) and (x, y, z, w) orientation of each free body."""
        names = self.object_names()
        pos = np.array([self.data.body(n).xpos for n in names]).reshape(-1, 3)
        wxyz = np.array([self.data.body(n).xquat for n in names]).reshape(-1, 4)
        return {
            "frame_id": self.profile.world_frame,
            "names": names,
            "x": pos[:, 0].copy(), "y": pos[:, 1].copy(), "z": pos[:, 2].copy(),
            "qx": wxyz[:, 1].copy(), "qy": wxyz[:, 2].copy(), "qz": wxyz[:, 3].copy(), "qw": wxyz[:, 0].copy(),
        }

    def place_object(self, name: str, x: float, y: float) -> None:
        """Moves a free body to world (x, y) at rest, keeping its height and
        orientation (a scenario's placement, before the run starts).

        Raises:
            ValueError: no free body of that name.
        """
        if name not in self.object_names():
            raise ValueError(f"no free object {name!r} in the scene (objects: {self.object_names()})")
        joint = self.model.joint(int(self.model.body(name).jntadr[0]))
        q, v = joint.qposadr[0], joint.dofadr[0]
        self.data.qpos[q:q + 2] = (x, y)
        self.data.qvel[v:v + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def site_position(self, name: str) -> np.ndarray:
        return self.data.site(name).xpos.copy()

    def site_in_base(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """Position and rotation matrix of a site in the base frame."""
        base = self.data.body(self.profile.base_frame)
        r_wb = base.xmat.reshape(3, 3)
        site = self.data.site(name)
        pos = r_wb.T @ (site.xpos - base.xpos)
        rot = r_wb.T @ site.xmat.reshape(3, 3)
        return pos, rot


def apply_joint_command(sim: SimPhysics, msg: Mapping[str, Any]) -> None:
    """Applies a decoded JointCommands message to the sim."""
    sim.command_joints(msg["names"], msg["q_ref"], msg["dq_ref"])
