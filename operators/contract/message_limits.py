"""Plausibility limits every received message is held to when it is decoded.

:func:`~teledora.operators.contract.messages.decode` checks a message's shape
(fields, types, lengths, NaN/Inf, unit quaternions, joint-name lists). A
message can pass that and still be impossible: a hand 1e300 m away, a stamp
1000 s in the future, a joint the robot does not have, a scan with no rays.
:class:`MessageLimits` is the second half of the one validation point: the
receiver's decode runs it with the receiver's clock, and a message that fails
is rejected whole with a :class:`MessageError` whose ``reason`` names the rule
it broke (the node runtime counts rejections per reason).

The bounds are for *absurd* values, not for control: a speed a little over
its cap is still clamped (and counted) by the actuator that applies it, and
a stale message is judged by each consumer's own freshness rule. Here:

* stamps: no ``stamp_ns`` may be negative or later than the receiver's
  clock by more than ``future_stamp_tolerance_s`` (the hosts' clocks are
  assumed synchronised to well within that); a hand's pose and input
  stamps in ``XrControllers`` likewise (0 stands for "no sample yet").
  Age is not bounded here: replays with their recorded stamps and a
  recorder catching up are legitimate old messages;
* joint data: names must be joints of the model; positions within the
  model's range widened by ``joint_reject_margin_rad`` (the actuators'
  "absurd" margin), velocities within ``max_joint_velocity_rad_s``, efforts
  within ``max_effort_n_m``;
* speeds commanded or measured: within ``reject_factor`` times the profile's
  caps (the same factor at which the actuators reject instead of clamping);
* positions: operator hands within ``max_hand_position_m`` of the headset
  origin, arm targets within ``max_reach_m`` of the base (and their gripper
  closure within ``max_gripper_rad``: the IK clamps it to the joint's range),
  anything in the world within ``max_world_position_m``;
* scans: at least one ray; ranges, range limits and angles physically
  possible; flow and gyro rates within ``max_angular_rate_rad_s``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping

import numpy as np

from teledora.operators.contract.messages import MessageError
from teledora.operators.errors import ConfigError
from teledora.operators.model.mjcf_joint_ranges import mjcf_joint_ranges

if TYPE_CHECKING:
    from teledora.operators.model.robot_profile import RobotProfile

# How far outside its travel a lift height is absurd rather than a reading error.
LIFT_MARGIN_M = 0.1


class MessageLimitsError(ConfigError):
    """A message-limits setting is missing or out of range."""


@dataclass(frozen=True)
class MessageLimitsSettings:
    """The profile's ``message_limits`` section (units in the names)."""

    future_stamp_tolerance_s: float
    max_hand_position_m: float
    max_reach_m: float
    max_gripper_rad: float
    max_world_position_m: float
    max_joint_velocity_rad_s: float
    max_effort_n_m: float
    max_range_m: float
    max_angular_rate_rad_s: float

    def __post_init__(self) -> None:
        for key, value in vars(self).items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
                raise MessageLimitsError(f"{key} must be a finite number > 0, got {value!r}")


def _fail(reason: str, text: str) -> MessageError:
    return MessageError(text, reason=reason)


def _within(where: str, value: float, bound: float) -> None:
    if not abs(value) <= bound:
        raise _fail("out_of_range", f"{where}: {value:g} is beyond the plausible ±{bound:g}")


def _all_within(where: str, values: np.ndarray, bound: float) -> None:
    if values.size and not float(np.max(np.abs(values))) <= bound:
        worst = float(values[int(np.argmax(np.abs(values)))])
        raise _fail("out_of_range", f"{where}: {worst:g} is beyond the plausible ±{bound:g}")


def _in_interval(where: str, value: float, lo: float, hi: float) -> None:
    if not lo <= value <= hi:
        raise _fail("out_of_range", f"{where}: {value:g} is outside [{lo:g}, {hi:g}]")


class MessageLimits:
    """The plausibility rules of every message kind, for one robot.

    Args:
        settings: The profile's ``message_limits``.
        joint_ranges: ``(lower, upper)`` of every joint of the model that has
            a range (rad, or m for the lift), by name.
        unranged_joints: Joints of the model without a range (the planar base).
        reject_factor: Speeds over this many times their cap are absurd.
        joint_margin: How far outside its range a joint position is absurd.
        caps: ``base_m_s``, ``yaw_rad_s``, ``lift_m_s``, ``arm_rad_s`` speed caps.
        lift_travel_m: The lift's height range from 0.
    """

    def __init__(self, settings: MessageLimitsSettings, joint_ranges: Mapping[str, tuple[float, float]],
                 unranged_joints: tuple[str, ...], reject_factor: float, joint_margin: float,
                 caps: Mapping[str, float], lift_travel_m: float) -> None:
        self.settings = settings
        self.joint_lo = {n: lo - joint_margin for n, (lo, _) in joint_ranges.items()}
        self.joint_hi = {n: hi + joint_margin for n, (_, hi) in joint_ranges.items()}
        self.joints = frozenset(joint_ranges) | frozenset(unranged_joints)
        self.future_ns = int(settings.future_stamp_tolerance_s * 1e9)
        self.base_speed = reject_factor * caps["base_m_s"]
        self.yaw_rate = reject_factor * caps["yaw_rad_s"]
        self.lift_speed = reject_factor * caps["lift_m_s"]
        self.arm_speed = reject_factor * caps["arm_rad_s"]
        self.lift_range = (-LIFT_MARGIN_M, lift_travel_m + LIFT_MARGIN_M)

    @classmethod
    def for_robot(cls, profile: "RobotProfile", mjcf_text: str) -> "MessageLimits":
        """The limits of the robot a profile describes, joint ranges read from
        its model's MJCF text (without MuJoCo)."""
        names = tuple(profile.arm_joint_names) + (profile.lift_joint,) + tuple(profile.base_joints)
        read = mjcf_joint_ranges(mjcf_text, names)
        ranged = {n: r for n, r in read.items() if r is not None}
        c = profile.command_limits
        caps = {"base_m_s": profile.base.max_linear_m_s, "yaw_rad_s": profile.base.max_yaw_rad_s,
                "lift_m_s": profile.lift.max_speed_m_s, "arm_rad_s": c.arm_max_speed_rad_s}
        return cls(profile.message_limits, ranged, tuple(n for n in names if n not in ranged), c.reject_factor,
                   c.joint_reject_margin_rad, caps, profile.lift.travel_mm / 1000.0)

    # ------------------------------------------------------------- the checks
    def check(self, kind: str, msg: Mapping[str, Any], now_ns: int | None) -> None:
        """Raises MessageError (with ``reason``) unless ``msg`` of ``kind`` is plausible
        for a receiver whose clock reads ``now_ns`` (None: stamps only checked for sign)."""
        self._stamp(f"{kind}.stamp_ns", int(msg["stamp_ns"]), now_ns)
        check = _CHECKS.get(kind)
        if check is not None:
            check(self, msg, now_ns)

    def _stamp(self, where: str, stamp: int, now_ns: int | None) -> None:
        if stamp < 0:
            raise _fail("bad_stamp", f"{where}: {stamp} is not a time (negative)")
        if now_ns is not None and stamp - now_ns > self.future_ns:
            ahead = (stamp - now_ns) / 1e9
            raise _fail("future_stamp", f"{where}: {ahead:.3f} s ahead of this node's clock "
                                        f"(tolerance {self.settings.future_stamp_tolerance_s:g} s)")

    def joint_values(self, where: str, names: list[str], positions: np.ndarray,
                     velocities: np.ndarray | None = None, efforts: np.ndarray | None = None,
                     velocity_bound: float | None = None) -> None:
        unknown = [n for n in names if n not in self.joints]
        if unknown:
            shown = unknown[:5] + (["..."] if len(unknown) > 5 else [])
            raise _fail("unknown_joint", f"{where}: {len(unknown)} joint(s) not in the model: {shown}")
        for name, q in zip(names, positions.tolist()):
            lo = self.joint_lo.get(name)
            if lo is not None:
                _in_interval(f"{where} {name}", q, lo, self.joint_hi[name])
            else:
                _within(f"{where} {name}", q, self.settings.max_world_position_m)
        if velocities is not None:
            _all_within(f"{where} velocity", velocities, velocity_bound or self.settings.max_joint_velocity_rad_s)
        if efforts is not None:
            _all_within(f"{where} effort", efforts, self.settings.max_effort_n_m)

    def planar(self, where: str, msg: Mapping[str, Any]) -> None:
        """x, y, yaw and the body twist of a planar pose message."""
        s = self.settings
        _within(f"{where}.x", msg["x"], s.max_world_position_m)
        _within(f"{where}.y", msg["y"], s.max_world_position_m)
        _within(f"{where}.yaw", msg["yaw"], 1e3)  # unwrapped yaw: a thousand radians is ~160 turns
        _within(f"{where}.vx", msg["vx"], self.base_speed)
        _within(f"{where}.vy", msg["vy"], self.base_speed)
        _within(f"{where}.wz", msg["wz"], self.yaw_rate)


def _xr(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    for hand in ("left", "right"):
        h = msg[hand]
        where = f"XrControllers.{hand}"
        if h["epoch"] < 0:
            raise _fail("out_of_range", f"{where}.epoch: {h['epoch']} is negative")
        limits._stamp(f"{where}.pose_stamp_ns", int(h["pose_stamp_ns"]), now_ns)
        limits._stamp(f"{where}.input_stamp_ns", int(h["input_stamp_ns"]), now_ns)
        _all_within(f"{where}.position", h["position"], limits.settings.max_hand_position_m)
        _in_interval(f"{where}.trigger", h["trigger"], 0.0, 1.0)
        _in_interval(f"{where}.squeeze", h["squeeze"], 0.0, 1.0)
        _all_within(f"{where}.stick", h["stick"], 1.0)


def _arm_targets(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    for arm in ("left", "right"):
        _all_within(f"ArmTargets.{arm}.position", msg[arm]["position"], limits.settings.max_reach_m)
        _within(f"ArmTargets.{arm}.gripper", msg[arm]["gripper"], limits.settings.max_gripper_rad)


def _base_command(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    _within("BaseCommand.forward_m_s", msg["forward_m_s"], limits.base_speed)
    _within("BaseCommand.left_m_s", msg["left_m_s"], limits.base_speed)
    _within("BaseCommand.yaw_rad_s", msg["yaw_rad_s"], limits.yaw_rate)


def _lift_command(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    _within("LiftCommand.velocity_m_s", msg["velocity_m_s"], limits.lift_speed)


def _teleop_state(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    if msg["reset_count"] < 0:
        raise _fail("out_of_range", f"TeleopState.reset_count: {msg['reset_count']} is negative")


def _joint_commands(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    limits.joint_values("JointCommands", msg["names"], msg["q_ref"], msg["dq_ref"], velocity_bound=limits.arm_speed)


def _joint_state(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    limits.joint_values("JointState", msg["names"], msg["position"], msg["velocity"], msg["effort"])


def _lift_state(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    _in_interval("LiftState.height_m", msg["height_m"], *limits.lift_range)
    _within("LiftState.velocity_m_s", msg["velocity_m_s"], limits.lift_speed)


def _odometry(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    limits.planar("Odometry", msg)


def _pose_estimate(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    limits.planar("PoseEstimate", msg)


def _ground_truth(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    limits.planar("GroundTruth", msg)
    _in_interval("GroundTruth.lift_height_m", msg["lift_height_m"], *limits.lift_range)
    limits.joint_values("GroundTruth", msg["joint_names"], msg["joint_position"], msg["joint_velocity"])


def _laser_scan(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    ranges = msg["ranges"]
    if len(ranges) == 0:
        raise _fail("empty", "LaserScan.ranges: a scan needs at least one ray")
    s = limits.settings
    _in_interval("LaserScan.range_min", msg["range_min"], 0.0, s.max_range_m)
    _in_interval("LaserScan.range_max", msg["range_max"], 0.0, s.max_range_m)
    for key in ("angle_min", "angle_max"):
        _within(f"LaserScan.{key}", msg[key], 4 * math.pi)
    _within("LaserScan.angle_increment", msg["angle_increment"], 2 * math.pi)
    _within("LaserScan.time_increment", msg["time_increment"], 1.0)  # negative when rays are listed against the spin
    _in_interval("LaserScan.scan_time", msg["scan_time"], 0.0, 10.0)
    finite = ranges[np.isfinite(ranges)]
    if finite.size and not (float(finite.min()) >= 0.0 and float(finite.max()) <= s.max_range_m):
        raise _fail("out_of_range", f"LaserScan.ranges: a finite range lies outside [0, {s.max_range_m:g}] m")
    intensities = msg["intensities"]
    if intensities.size and np.count_nonzero(np.isfinite(intensities)) != intensities.size:
        raise _fail("not_finite", "LaserScan.intensities: contains NaN or Inf")


def _optical_flow(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    rate = limits.settings.max_angular_rate_rad_s
    _within("OpticalFlow.flow_rate_x", msg["flow_rate_x"], rate)
    _within("OpticalFlow.flow_rate_y", msg["flow_rate_y"], rate)
    _in_interval("OpticalFlow.quality", msg["quality"], 0, 255)
    _within("OpticalFlow.ground_distance_m", msg["ground_distance_m"], limits.settings.max_range_m)
    _in_interval("OpticalFlow.integration_time_s", msg["integration_time_s"], 0.0, 10.0)


def _gyro(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    _all_within("Gyro.angular_velocity", msg["angular_velocity"], limits.settings.max_angular_rate_rad_s)


def _mocap(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    if msg["tracking_valid"]:
        _all_within("MocapPose.position", msg["position"], limits.settings.max_world_position_m)


def _object_poses(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
    for key in ("x", "y", "z"):
        _all_within(f"ObjectPoses.{key}", msg[key], limits.settings.max_world_position_m)
    q = np.stack([msg["qx"], msg["qy"], msg["qz"], msg["qw"]])
    norms = np.sqrt(np.sum(q * q, axis=0))
    if norms.size and not float(np.max(np.abs(norms - 1.0))) <= 1e-3:
        raise _fail("out_of_range", "ObjectPoses: an orientation is not a unit quaternion")


def _counts(kind: str, keys: tuple[str, ...]) -> Callable[[MessageLimits, Mapping[str, Any], int | None], None]:
    def check(limits: MessageLimits, msg: Mapping[str, Any], now_ns: int | None) -> None:
        for key in keys:
            if msg[key] < 0:
                raise _fail("out_of_range", f"{kind}.{key}: {msg[key]} is negative")
    return check


_CHECKS: dict[str, Callable[[MessageLimits, Mapping[str, Any], int | None], None]] = {
    "XrControllers": _xr,
    "ArmTargets": _arm_targets,
    "BaseCommand": _base_command,
    "LiftCommand": _lift_command,
    "TeleopState": _teleop_state,
    "JointCommands": _joint_commands,
    "JointState": _joint_state,
    "LiftState": _lift_state,
    "Odometry": _odometry,
    "PoseEstimate": _pose_estimate,
    "GroundTruth": _ground_truth,
    "LaserScan": _laser_scan,
    "OpticalFlow": _optical_flow,
    "Gyro": _gyro,
    "MocapPose": _mocap,
    "ObjectPoses": _object_poses,
    "Diagnostics": _counts("Diagnostics", ("received", "sent", "rejected", "clamped", "dropped")),
    "RecorderStatus": _counts("RecorderStatus", ("messages",)),
    "EpisodeState": _counts("EpisodeState", ("number", "kept", "discarded")),
}
