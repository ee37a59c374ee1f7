"""A policy's observation from the robot's reported state, and its action back
as the commands the operator's path takes.

The observation is the LeRobot export's ``observation.state``, built with the
export's own feature layout (:mod:`~teledora.operators.datasets.lerobot_features`):
the same 18 entries, order and units, so a policy trained on an exported
dataset sees at run time what it saw in training. Only low-dimensional
policies are served so far: a checkpoint whose inputs name anything besides
``observation.state`` (camera images) is refused with the names it wants.

An action (the export's ``action``: arm joints in degrees, grippers 0..100
open, base speeds, lift height in mm) becomes

* ``ArmTargets``: each arm's joint values, clamped into the joints' ranges
  (:class:`~teledora.operators.drive.arm_command_limits.ArmCommandLimits`),
  turned into its grip pose in the base frame by forward kinematics at the
  measured lift height, gripper closure in rad, so that the IK takes them
  through its collision guard like the operator's targets;
* ``BaseCommand``: the speeds under the base's command limits;
* ``LiftCommand``: the velocity that reaches the asked height (clamped to the
  lift's travel) in one frame, capped at the lift's speed.

A non-finite or absurd value, or an action of the wrong length, rejects the
whole action (counted); nothing of it is sent. Clamps are counted per quantity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from teledora.operators.datasets.lerobot_features import (
    ARM_JOINTS,
    SIDES,
    Units,
    arm_values,
    base_values,
    joint_map,
    lift_value,
    state_names,
    teledora_joint,
)
from teledora.operators.drive.arm_command_limits import ArmCommandLimits
from teledora.operators.drive.base_command_limits import BaseCommandLimits
from teledora.operators.drive.command_limits import Clamp, CommandRejected
from teledora.operators.drive.lift_command_limits import LiftCommandLimits
from teledora.operators.drive.omni_drive import BodyTwist
from teledora.operators.errors import ConfigError, TeledoraError
from teledora.operators.geometry.quaternions import matrix_to_quat
from teledora.operators.ik.grip_kinematics import GripKinematics

STATE_FEATURE = "observation.state"
ACTION_FEATURE = "action"


class PolicyFeatureError(ConfigError):
    """A checkpoint whose inputs or outputs this node cannot serve."""


def check_features(inputs: Mapping[str, Sequence[int]], outputs: Mapping[str, Sequence[int]]) -> None:
    """Accepts a policy reading ``observation.state`` and writing ``action``, both
    of the export's 18 entries.

    Raises:
        PolicyFeatureError: naming what differs.
    """
    n = len(state_names())
    extra = sorted(set(inputs) - {STATE_FEATURE})
    if extra:
        raise PolicyFeatureError(f"the policy wants inputs this node does not build yet: {extra} "
                                 f"(only {STATE_FEATURE!r} is served)")
    if STATE_FEATURE not in inputs:
        raise PolicyFeatureError(f"the policy has no {STATE_FEATURE!r} input")
    if ACTION_FEATURE not in outputs or set(outputs) != {ACTION_FEATURE}:
        raise PolicyFeatureError(f"the policy's outputs are {sorted(outputs)}, expected only {ACTION_FEATURE!r}")
    for name, shape in ((STATE_FEATURE, inputs[STATE_FEATURE]), (ACTION_FEATURE, outputs[ACTION_FEATURE])):
        if list(shape) != [n]:
            raise PolicyFeatureError(f"{name} has shape {list(shape)}; the dataset export's is [{n}] ({', '.join(state_names())})")


@dataclass(frozen=True)
class Observation:
    state: np.ndarray  # float32, the export's 18 entries
    lift_height_m: float
    stamp_ns: int  # the oldest of the states it was built from


class ObservationBuilder:
    """Keeps the newest arm joint state, odometry and lift state and builds the
    observation from them once all three are known and none is older than
    ``max_age_s``.

    Args:
        units: The export's unit settings (gripper closed angle).
        max_age_s: The oldest state an observation may use.
    """

    def __init__(self, units: Units, max_age_s: float) -> None:
        if not (math.isfinite(max_age_s) and max_age_s > 0):
            raise ConfigError(f"observation max_age_s must be positive, got {max_age_s!r}")
        self.units = units
        self.max_age_ns = int(max_age_s * 1e9)
        self._arms: tuple[list[float], int] | None = None
        self._base: tuple[list[float], int] | None = None
        self._lift: tuple[float, int] | None = None
        self.waiting = "no state yet"

    def on_joint_states(self, msg: Mapping[str, Any]) -> None:
        """Takes a decoded ``JointState``.

        Raises:
            KeyError: a joint of the layout is missing (the state is not kept).
        """
        self._arms = (arm_values(joint_map(msg["names"], msg["position"]), self.units), int(msg["stamp_ns"]))

    def on_odometry(self, msg: Mapping[str, Any]) -> None:
        self._base = (base_values(msg["vx"], msg["vy"], msg["wz"]), int(msg["stamp_ns"]))

    def on_lift_state(self, msg: Mapping[str, Any]) -> None:
        self._lift = (float(msg["height_m"]), int(msg["stamp_ns"]))

    def build(self, now_ns: int) -> Observation | None:
        """The observation now, or None (``waiting`` says why)."""
        parts = {"arm joint state": self._arms, "odometry": self._base, "lift state": self._lift}
        missing = [k for k, v in parts.items() if v is None]
        if missing:
            self.waiting = f"no {', '.join(missing)} yet"
            return None
        stale = [k for k, v in parts.items() if now_ns - v[1] > self.max_age_ns]
        if stale:
            self.waiting = f"{', '.join(stale)} older than {self.max_age_ns / 1e9:g} s"
            return None
        self.waiting = ""
        arms, base, lift = self._arms, self._base, self._lift
        state = np.array(arms[0] + base[0] + [lift_value(lift[0])], dtype=np.float32)
        return Observation(state, lift[0], min(arms[1], base[1], lift[1]))


@dataclass(frozen=True)
class PolicyCommands:
    arm_targets: dict[str, Any]
    base_cmd: dict[str, Any]
    lift_cmd: dict[str, Any]
    clamps: tuple[Clamp, ...]


class ActionRejected(TeledoraError, ValueError):
    """A policy action that cannot be used at all."""


class ActionMapper:
    """A policy action to the contract's command messages, bounded.

    Args:
        grips: Forward kinematics of both grips (the robot's model).
        arm_limits: The arms' command limits (joint ranges).
        base_limits: The base's speed caps.
        lift_limits: The lift's speed cap.
        units: The export's unit settings.
        lift_travel_m: The lift's height range, 0..this.
        fps: The dataset's frame rate: a lift height is reached over one frame.
        base_frame: ``frame_id`` of the arm targets.
    """

    def __init__(self, grips: GripKinematics, arm_limits: ArmCommandLimits, base_limits: BaseCommandLimits,
                 lift_limits: LiftCommandLimits, units: Units, lift_travel_m: float, fps: float,
                 base_frame: str) -> None:
        if not (math.isfinite(fps) and fps > 0):
            raise ConfigError(f"fps must be positive, got {fps!r}")
        self.grips, self.arm_limits, self.base_limits, self.lift_limits = grips, arm_limits, base_limits, lift_limits
        self.units, self.lift_travel_m, self.fps, self.base_frame = units, float(lift_travel_m), float(fps), base_frame
        self.names = [teledora_joint(side, joint) for side in SIDES for joint in ARM_JOINTS]
        self.rejected = 0
        self.clamped_by: dict[str, int] = {}

    def map(self, action: Sequence[float], lift_height_m: float, stamp_ns: int) -> PolicyCommands:
        """The commands for one action, taken with the lift at ``lift_height_m``.

        Raises:
            ActionRejected: wrong length, or a value not finite or absurd (counted).
        """
        try:
            out = self._map(action, lift_height_m, stamp_ns)
        except (CommandRejected, ActionRejected) as exc:
            self.rejected += 1
            raise ActionRejected(str(exc)) from None
        for c in out.clamps:
            self.clamped_by[c.quantity] = self.clamped_by.get(c.quantity, 0) + 1
        return out

    def _map(self, action: Sequence[float], lift_height_m: float, stamp_ns: int) -> PolicyCommands:
        a = np.asarray(action, dtype=float).reshape(-1)
        n = len(state_names())
        if a.shape != (n,):
            raise ActionRejected(f"action has {a.size} entries, the export's has {n}")
        if not np.all(np.isfinite(a)):
            bad = [state_names()[i] for i in np.flatnonzero(~np.isfinite(a))]
            raise ActionRejected(f"action entries not finite: {bad}")
        q = np.empty(len(self.names))
        for i, name in enumerate(self.names):
            if name.endswith("_gripper"):
                q[i] = self.units.gripper_closed_rad * (1.0 - a[i] / 100.0)
            else:
                q[i] = math.radians(a[i])
        arm = self.arm_limits.bound(self.names, q, np.zeros(len(q)))
        q_used = arm.value[0]
        clamps = list(arm.clamps)
        poses = self.grips.grips(self.names, q_used, lift_height_m)
        targets: dict[str, Any] = {"stamp_ns": stamp_ns, "frame_id": self.base_frame}
        for side in SIDES:
            p, r = poses[side]
            gripper = float(q_used[self.names.index(teledora_joint(side, "gripper"))])
            targets[side] = {"enabled": True, "position": [float(v) for v in p],
                             "orientation": [float(v) for v in matrix_to_quat(r)], "gripper": gripper, "slow": False}
        k = 2 * len(ARM_JOINTS)
        base = self.base_limits.bound(BodyTwist(a[k], a[k + 1], math.radians(a[k + 2])))
        clamps += base.clamps
        height = a[k + 3] / 1000.0
        if height < 0.0 or height > self.lift_travel_m:
            used = min(self.lift_travel_m, max(0.0, height))
            clamps.append(Clamp("lift height", height, used, "m"))
            height = used
        v = (height - float(lift_height_m)) * self.fps
        cap = self.lift_limits.max_speed_m_s
        if abs(v) > cap:  # a far height is a target, not an absurd speed: go there at the cap
            clamps.append(Clamp("lift speed", v, math.copysign(cap, v), "m/s"))
            v = math.copysign(cap, v)
        lift = self.lift_limits.bound(v)
        clamps += lift.clamps
        t = base.value
        return PolicyCommands(
            targets,
            {"stamp_ns": stamp_ns, "forward_m_s": t.forward_m_s, "left_m_s": t.left_m_s, "yaw_rad_s": t.yaw_rad_s},
            {"stamp_ns": stamp_ns, "velocity_m_s": float(lift.value)},
            tuple(clamps),
        )

    def counts(self) -> dict[str, Any]:
        return {"rejected": self.rejected, "clamped_by": dict(sorted(self.clamped_by.items()))}
