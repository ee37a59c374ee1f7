"""Command limits of the arms: joint positions bounded to their ranges, the
velocity feedforward to a speed cap.

The ranges are the model's joint ranges (the MJCF the robot profile names);
on hardware each is narrowed further to the servo's calibrated range, so the
same rule bounds the sim and the real arms and only the ranges differ.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from teledora.operators.drive.command_limits import (
    Bounded,
    Clamp,
    CommandLimits,
    CommandLimitsError,
    CommandRejected,
    bound_magnitude,
    check_cap,
    require_finite,
)
from teledora.operators.model.mjcf_joint_ranges import MjcfJointError, mjcf_joint_ranges
from teledora.operators.model.robot_profile import RobotProfile

if TYPE_CHECKING:
    import mujoco

JointRange = tuple[float, float]


def model_joint_ranges(model: "mujoco.MjModel", names: Iterable[str]) -> dict[str, JointRange]:
    """The ``(lower, upper)`` range (rad) of each named joint in a MuJoCo model.

    Raises:
        CommandLimitsError: a joint is missing or has no range (it could not be bounded).
    """
    out: dict[str, JointRange] = {}
    for name in names:
        try:
            jid = model.joint(name).id
        except KeyError:
            raise CommandLimitsError(f"joint {name!r} is not in the model") from None
        if not model.jnt_limited[jid]:
            raise CommandLimitsError(f"joint {name!r} has no range in the model, so its commands cannot be bounded")
        lo, hi = (float(v) for v in model.jnt_range[jid])
        out[name] = (lo, hi)
    return out


class ArmCommandLimits(CommandLimits):
    """Bounds name-addressed joint commands (``q_ref``, ``dq_ref``).

    A position is clamped into its joint's range and rejected when it lies
    more than ``reject_margin_rad`` outside it; a feedforward velocity is
    clamped to ``±max_speed_rad_s`` and rejected beyond ``reject_factor``
    times that. One rejected value rejects the whole command (joint data is
    acted on whole). A joint without a range here is rejected too.

    Args:
        ranges: ``(lower, upper)`` per joint name, rad.
        max_speed_rad_s: Cap on ``|dq_ref|``.
        reject_factor: A feedforward over this many times its cap is rejected.
        reject_margin_rad: A position farther than this outside its range is rejected.
    """

    def __init__(self, ranges: Mapping[str, JointRange], max_speed_rad_s: float, reject_factor: float,
                 reject_margin_rad: float) -> None:
        super().__init__()
        check_cap("joint speed", max_speed_rad_s, reject_factor)
        if not (math.isfinite(reject_margin_rad) and reject_margin_rad > 0):
            raise CommandLimitsError(f"reject_margin_rad must be positive and finite, got {reject_margin_rad!r}")
        self.ranges: dict[str, JointRange] = {}
        for name, (lo, hi) in ranges.items():
            if not (math.isfinite(lo) and math.isfinite(hi) and lo <= hi):
                raise CommandLimitsError(f"joint {name!r}: range ({lo}, {hi}) is not a finite interval")
            self.ranges[name] = (float(lo), float(hi))
        self.max_speed_rad_s = float(max_speed_rad_s)
        self.reject_factor = float(reject_factor)
        self.reject_margin_rad = float(reject_margin_rad)

    @classmethod
    def from_model(cls, model: "mujoco.MjModel", profile: RobotProfile) -> "ArmCommandLimits":
        """Limits of the profile's 14 arm and gripper joints, ranges from ``model``."""
        c = profile.command_limits
        return cls(model_joint_ranges(model, profile.arm_joint_names), c.arm_max_speed_rad_s, c.reject_factor,
                   c.joint_reject_margin_rad)

    @classmethod
    def from_mjcf(cls, xml_text: str, profile: RobotProfile) -> "ArmCommandLimits":
        """The same limits as :meth:`from_model`, ranges read from the MJCF text
        without MuJoCo (see :mod:`teledora.operators.model.mjcf_joint_ranges`).

        Raises:
            CommandLimitsError: a joint is missing or has no range, or the text cannot be read.
        """
        try:
            read = mjcf_joint_ranges(xml_text, profile.arm_joint_names)
        except MjcfJointError as exc:
            raise CommandLimitsError(str(exc)) from None
        ranges: dict[str, JointRange] = {}
        for name, rng in read.items():
            if rng is None:
                raise CommandLimitsError(f"joint {name!r} has no range in the model, so its commands cannot be bounded")
            ranges[name] = rng
        c = profile.command_limits
        return cls(ranges, c.arm_max_speed_rad_s, c.reject_factor, c.joint_reject_margin_rad)

    def narrowed(self, ranges: Mapping[str, JointRange]) -> "ArmCommandLimits":
        """The same limits with each named joint's range cut to its overlap with ``ranges``.

        Raises:
            CommandLimitsError: a named joint is unknown here, or the ranges do not overlap.
        """
        merged = dict(self.ranges)
        for name, (lo, hi) in ranges.items():
            if name not in merged:
                raise CommandLimitsError(f"joint {name!r} has no range to narrow")
            new_lo, new_hi = max(merged[name][0], float(lo)), min(merged[name][1], float(hi))
            if not new_lo <= new_hi:
                raise CommandLimitsError(f"joint {name!r}: range {merged[name]} and ({lo}, {hi}) do not overlap")
            merged[name] = (new_lo, new_hi)
        return ArmCommandLimits(merged, self.max_speed_rad_s, self.reject_factor, self.reject_margin_rad)

    def _bound(self, names: Sequence[str], q_ref: npt.ArrayLike,
               dq_ref: npt.ArrayLike) -> Bounded[tuple[np.ndarray, np.ndarray]]:
        q_in = np.asarray(q_ref, dtype=float)
        dq_in = np.asarray(dq_ref, dtype=float)
        if q_in.shape != (len(names),) or dq_in.shape != (len(names),):
            raise CommandRejected(f"q_ref {q_in.shape} and dq_ref {dq_in.shape} must match {len(names)} names")
        q, dq = q_in.copy(), dq_in.copy()
        clamps: list[Clamp] = []
        for i, name in enumerate(names):
            joint_range = self.ranges.get(name)
            if joint_range is None:
                raise CommandRejected(f"joint {name!r} has no limits here")
            lo, hi = joint_range
            qi = require_finite(f"{name} q_ref", q[i], "rad")
            if qi < lo - self.reject_margin_rad or qi > hi + self.reject_margin_rad:
                raise CommandRejected(
                    f"{name} q_ref {qi:.6g} rad is absurd: over {self.reject_margin_rad:g} rad outside its range [{lo:g}, {hi:g}]"
                )
            if qi < lo or qi > hi:
                q[i] = min(hi, max(lo, qi))
                clamps.append(Clamp(f"{name} q_ref", qi, float(q[i]), "rad"))
            dq[i], clamp = bound_magnitude(f"{name} dq_ref", dq[i], self.max_speed_rad_s, self.reject_factor, "rad/s")
            if clamp is not None:
                clamps.append(clamp)
        return Bounded((q, dq), tuple(clamps))
