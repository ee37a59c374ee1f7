"""Support for the IK benchmarks: drive ``IkLoop`` with the calls the teleop
node's IK makes, and check configurations with MuJoCo's own collision detection.

``NodeDriver`` replays a node's input timeline without dora: arm targets and
joint states at the XR / arm rate (90 Hz), lift states at 50 Hz and timer ticks
every control period, each handled the way ``IkStage`` in
``nodes/teleop/teleop.py`` handles it
(``on_targets`` then an immediate solve when it says so, ``tick_due`` then a
solve). The joint states it feeds back are the IK's own last command (ideal
tracking).

``MujocoCollisionCheck`` is independent of the IK's pair list: the pairs are
the ones MuJoCo's ``mj_collision`` reports on a copy of the model whose
collision geoms are all inflated into overlapping spheres (so its own
collision filter alone decides), and each distance is ``mj_geomDistance`` on
the real geometry of the robot model plus a floor plane at z = 0.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any, Callable

import mujoco
import numpy as np

from teledora import models
from teledora.operators.geometry import Pose
from teledora.operators.ik.ik_config import IkConfig
from teledora.operators.ik.ik_loop import IkLoop
from teledora.operators.ik.ik_model import build_ik_model
from teledora.operators.ik.ik_solver import BimanualIk
from teledora.operators.model.sides import SIDES

NS = 1_000_000_000


def ik_config(**overrides: Any) -> dict:
    """The shipped ik.yaml with ``section.key=value`` overrides (``collision__guard_distance_m=None``)."""
    data = copy.deepcopy(models.load_yaml("alohamini2/ik.yaml"))
    for key, value in overrides.items():
        section, name = key.split("__")
        data[section][name] = value
    return data


def make_loop(data: dict | None = None) -> IkLoop:
    config = IkConfig.from_mapping(data or ik_config())
    settings = config.settings
    profile = models.load_profile()
    ik = BimanualIk(build_ik_model(models.path(settings.solver.model), settings.solver.add_floor), profile, settings)
    return IkLoop(ik, config.workspace, config.node, profile)


def restart(loop: IkLoop) -> IkLoop:
    """A fresh loop on the same IK (what a restarted node would be)."""
    return IkLoop(loop.ik, loop.workspace, loop.config, loop.profile)


def arm_targets(profile, poses: dict[str, Pose | None], gripper: float = 0.0) -> dict:
    msg: dict[str, Any] = {"frame_id": profile.base_frame}
    for side in SIDES:
        pose = poses.get(side)
        msg[side] = {
            "enabled": pose is not None,
            "position": list(pose.position) if pose is not None else [0.0, 0.0, 0.0],
            "orientation": list(pose.orientation) if pose is not None else [0.0, 0.0, 0.0, 1.0],
            "gripper": gripper,
            "slow": False,
        }
    return msg


@dataclass
class Solve:
    """One solve the loop published."""

    t_ns: int
    command: dict
    cpu_ns: int = 0  # CPU time the loop's solve took


class NodeDriver:
    """Feeds a loop the inputs of an ``ik`` node in time order.

    Args:
        loop: A fresh ``IkLoop``.
        arm_q: Starting arm joints (name -> rad), as the first joint state.
        lift_height_m: Lift height (driver convention), constant.
        target_rate_hz: Rate of arm targets and joint states.
        lift_rate_hz: Rate of lift states.
    """

    def __init__(self, loop: IkLoop, arm_q: dict[str, float], lift_height_m: float,
                 target_rate_hz: float = 90.0, lift_rate_hz: float = 50.0) -> None:
        self.loop = loop
        self.profile = loop.profile
        self.names = list(self.profile.arm_joint_names)
        self.q = {n: float(arm_q.get(n, 0.0)) for n in self.names}
        self.lift_height_m = lift_height_m
        self.t_ns = 0
        self.period = {"targets": int(NS / target_rate_hz), "lift": int(NS / lift_rate_hz), "tick": loop.period_ns}
        self.next = {"targets": self.period["targets"], "lift": self.period["lift"], "tick": self.period["tick"]}
        loop.on_lift({"height_m": lift_height_m})
        loop.on_joint_states(self._joint_state())

    def _joint_state(self) -> dict:
        return {"stamp_ns": self.t_ns, "names": self.names, "position": [self.q[n] for n in self.names]}

    def run(self, duration_s: float, target: Callable[[int], dict], on_solve: Callable[[Solve], None]) -> None:
        """Advances ``duration_s``; ``target(t_ns)`` gives the ArmTargets message
        sent at t_ns; ``on_solve`` sees every published command."""
        end = self.t_ns + int(duration_s * NS)
        while True:
            kind = min(self.next, key=self.next.get)
            t = self.next[kind]
            if t > end:
                self.t_ns = end
                return
            self.t_ns = t
            self.next[kind] += self.period[kind]
            if kind == "lift":
                self.loop.on_lift({"height_m": self.lift_height_m})
            elif kind == "targets":
                self.loop.on_joint_states(self._joint_state())
                if self.loop.on_targets(target(t), t):
                    self._solve(t, on_solve)
            elif self.loop.tick_due(t):
                self._solve(t, on_solve)

    def _solve(self, t: int, on_solve: Callable[[Solve], None]) -> None:
        c0 = time.process_time_ns()
        cmd = self.loop.solve(t)
        cpu = time.process_time_ns() - c0
        if cmd is None:
            return
        self.q = dict(zip(cmd["names"], (float(v) for v in cmd["q_ref"])))
        on_solve(Solve(t, cmd, cpu))


class MujocoCollisionCheck:
    """Signed distances of every geom pair MuJoCo's collision filter allows
    (robot model plus a floor plane), independent of the IK's pair list."""

    def __init__(self, model_file: str = "alohamini2/alohamini2.xml") -> None:
        path = str(models.path(model_file))
        self.model = self._with_floor(mujoco.MjSpec.from_file(path)).compile()
        self.data = mujoco.MjData(self.model)
        self.pairs = self._filter_pairs(path)
        self._fromto = np.zeros(6)
        profile = models.load_profile()
        self.profile = profile
        self._adr = {n: int(self.model.joint(n).qposadr[0]) for n in profile.arm_joint_names}
        self._lift = int(self.model.joint(profile.lift_joint).qposadr[0])

    @staticmethod
    def _with_floor(spec: mujoco.MjSpec) -> mujoco.MjSpec:
        floor = spec.worldbody.add_geom()
        floor.name, floor.type, floor.size = "check_floor", mujoco.mjtGeom.mjGEOM_PLANE, [0.0, 0.0, 0.05]
        floor.contype, floor.conaffinity = 1, 1
        return spec

    def _filter_pairs(self, path: str) -> list[tuple[int, int]]:
        spec = self._with_floor(mujoco.MjSpec.from_file(path))
        for geom in spec.geoms:
            if (geom.contype or geom.conaffinity) and geom.type != mujoco.mjtGeom.mjGEOM_PLANE:
                geom.type, geom.size, geom.fromto = mujoco.mjtGeom.mjGEOM_SPHERE, [20.0, 0, 0], [np.nan] * 6
                geom.meshname = ""  # else a mesh geom keeps its mesh's size and place
        inflated = spec.compile()
        data = mujoco.MjData(inflated)
        mujoco.mj_forward(inflated, data)
        return sorted({(int(min(c.geom)), int(max(c.geom))) for c in data.contact[: data.ncon]})

    def name(self, g: int) -> str:
        return mujoco.mj_id2name(self.model, mujoco.mjtObj.mjOBJ_GEOM, g)

    def set(self, names: list[str], q: np.ndarray, lift_height_m: float) -> None:
        for n, v in zip(names, q):
            if n in self._adr:
                self.data.qpos[self._adr[n]] = v
        self.data.qpos[self._lift] = self.profile.lift_height_to_joint(lift_height_m)
        mujoco.mj_kinematics(self.model, self.data)

    def closest(self, distmax: float = 0.1) -> tuple[float, tuple[int, int]]:
        """(smallest signed distance, its pair) at the configuration last set."""
        best, pair = distmax, (-1, -1)
        for g1, g2 in self.pairs:
            d = mujoco.mj_geomDistance(self.model, self.data, g1, g2, best, self._fromto)
            if d < best:
                best, pair = d, (g1, g2)
        return float(best), pair
