"""Whose commands go on: the selector's decision applied to the operator's and
the policy's commands, in the node that owns the IK's inputs.

* ``operator``: the teleop scheme's arm targets, base and lift commands.
* ``policy``: the policy's newest arm targets (on to the IK, whose collision
  guard and references they pass like any target) and its base and lift
  commands held to the operator's own caps (linear speed capped along its
  direction, yaw rate and lift speed clamped).
* ``stopped``: both arms disabled where they are (the scheme's held targets),
  base and lift at zero.

The policy counts as current only once all three of its commands arrived; the
stamp the selector judges is the oldest of the three newest, so one command
kind that stops coming makes the policy stale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.policy.authority import OPERATOR, POLICY, Decision

POLICY_KINDS = {"arm_targets": "ArmTargets", "base_cmd": "BaseCommand", "lift_cmd": "LiftCommand"}


@dataclass(frozen=True)
class DriveCaps:
    """The operator's command caps, which the policy's commands are held to."""

    max_speed_m_s: float
    max_yaw_rate_rad_s: float
    max_lift_speed_m_s: float


@dataclass(frozen=True)
class Selected:
    arm_targets: dict[str, Any]
    base_cmd: dict[str, Any]
    lift_cmd: dict[str, Any]


def _clamp(v: float, limit: float) -> float:
    return min(max(float(v), -limit), limit)


def capped_base(cmd: Mapping[str, Any], caps: DriveCaps) -> dict[str, Any]:
    fwd, left = float(cmd["forward_m_s"]), float(cmd["left_m_s"])
    speed = math.hypot(fwd, left)
    if speed > caps.max_speed_m_s:
        fwd, left = fwd * caps.max_speed_m_s / speed, left * caps.max_speed_m_s / speed
    return {"stamp_ns": int(cmd["stamp_ns"]), "forward_m_s": fwd + 0.0, "left_m_s": left + 0.0,
            "yaw_rad_s": _clamp(cmd["yaw_rad_s"], caps.max_yaw_rate_rad_s) + 0.0}


def capped_lift(cmd: Mapping[str, Any], caps: DriveCaps) -> dict[str, Any]:
    return {"stamp_ns": int(cmd["stamp_ns"]), "velocity_m_s": _clamp(cmd["velocity_m_s"], caps.max_lift_speed_m_s) + 0.0}


class PolicyCommands:
    """The policy's newest commands (newest by arrival) and what the selector
    is told about their age."""

    def __init__(self) -> None:
        self.newest: dict[str, Mapping[str, Any] | None] = dict.fromkeys(POLICY_KINDS)
        self._news = False

    def on_command(self, name: str, msg: Mapping[str, Any]) -> None:
        if name not in POLICY_KINDS:
            raise KeyError(f"not a policy command: {name!r}")
        self.newest[name] = msg
        self._news = True

    @property
    def complete(self) -> bool:
        return all(m is not None for m in self.newest.values())

    def take_stamp(self) -> int | None:
        """For ``Authority.step``: the oldest stamp of the three newest commands
        when any arrived since the last call and all three are known, else None."""
        if not self._news or not self.complete:
            return None
        self._news = False
        return min(int(m["stamp_ns"]) for m in self.newest.values())


def select(decision: Decision, scheme_arm_targets: Mapping[str, Any], scheme_base_cmd: Mapping[str, Any],
           scheme_lift_cmd: Mapping[str, Any], policy: PolicyCommands, caps: DriveCaps, now_ns: int) -> Selected:
    """The commands that go on this step (see the module docstring)."""
    if decision.driver == OPERATOR:
        return Selected(dict(scheme_arm_targets), dict(scheme_base_cmd), dict(scheme_lift_cmd))
    if decision.driver == POLICY and policy.complete:
        n = policy.newest
        return Selected(dict(n["arm_targets"]), capped_base(n["base_cmd"], caps), capped_lift(n["lift_cmd"], caps))
    held = {side: {**scheme_arm_targets[side], "enabled": False} for side in ("left", "right")}
    return Selected(
        {**scheme_arm_targets, **held},
        {"stamp_ns": now_ns, "forward_m_s": 0.0, "left_m_s": 0.0, "yaw_rad_s": 0.0},
        {"stamp_ns": now_ns, "velocity_m_s": 0.0},
    )
