"""A deterministic stand-in for a person in a VR headset.

A script is a list of keyframes: at time ``t_s`` each hand has a pose offset
(metres and degrees of roll/pitch/yaw, relative to that hand's origin), stick
values, and held buttons. Poses blend between keyframes with a minimum-jerk
profile, so the arm targets start and stop smoothly; sticks and buttons hold
the value of the last keyframe passed. The result is a pure function of time,
which makes a scripted run reproducible.

Base goals make the drive closed-loop, as a person watching the robot would:
a keyframe may carry ``base: {drive_to_m: [x, y]}`` or ``base: {turn_to_deg:
a}`` (odometry frame), and while its segment is active the operator pushes the
sticks towards that goal from the latest odometry pose instead of holding fixed
stick values (:func:`goal_sticks`). :class:`ScriptClock` holds script time at
the end of such a segment until the goal is reached (or ``max_wait_s`` has
passed), so a slow or overloaded machine stretches the script instead of
cutting the path short. Without odometry the goals are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from teledora.operators.errors import ConfigError
from teledora.operators.geometry import matrix_to_quat, wrap_angle
from teledora.operators.model.sides import SIDES
from teledora.operators.config import config_from_mapping

BUTTONS = ("trigger", "squeeze", "primary", "secondary", "stick_click", "menu")
UI_BUTTONS = ("ui_estop", "ui_release_stop", "ui_pause", "ui_episode_start", "ui_episode_keep", "ui_episode_discard")


class ScriptError(ConfigError):
    """The operator script is malformed."""


def _zeros(n: int) -> Any:
    return field(default_factory=lambda: np.zeros(n))


@dataclass(frozen=True, eq=False)
class HandKey:
    """One hand at a keyframe: pose offset (m) and roll/pitch/yaw (deg) from the
    hand's origin, stick and buttons. What a keyframe leaves out is zero or released."""

    offset_m: np.ndarray = _zeros(3)
    rpy_deg: np.ndarray = _zeros(3)
    stick: np.ndarray = _zeros(2)
    trigger: float = 0.0
    squeeze: float = 0.0
    primary: float = 0.0
    secondary: float = 0.0
    stick_click: float = 0.0
    menu: float = 0.0

    def __post_init__(self) -> None:
        for name, n in (("offset_m", 3), ("rpy_deg", 3), ("stick", 2)):
            v = np.asarray(getattr(self, name), dtype=float)
            if v.shape != (n,) or not np.all(np.isfinite(v)):
                raise ScriptError(f"{name}: expected {n} finite numbers")
            object.__setattr__(self, name, v)

    @property
    def buttons(self) -> dict[str, float]:
        return {b: getattr(self, b) for b in BUTTONS}


@dataclass(frozen=True, eq=False)
class BaseGoal:
    """Where a keyframe's segment steers the base, in the odometry frame:
    straight to a point (turning only to keep its bearing), or in place to a
    heading; or where it moves the base's lift (driver height, m), watching
    the lift's reported height. Exactly one of the three."""

    drive_to_m: np.ndarray | None = None
    turn_to_deg: float | None = None
    lift_to_m: float | None = None

    def __post_init__(self) -> None:
        if sum(g is not None for g in (self.drive_to_m, self.turn_to_deg, self.lift_to_m)) != 1:
            raise ScriptError("base: give exactly one of drive_to_m, turn_to_deg and lift_to_m")
        if self.drive_to_m is not None:
            v = np.asarray(self.drive_to_m, dtype=float)
            if v.shape != (2,) or not np.all(np.isfinite(v)):
                raise ScriptError("base.drive_to_m: expected 2 finite numbers (x, y)")
            object.__setattr__(self, "drive_to_m", v)


@dataclass(frozen=True)
class BaseDriving:
    """How the operator steers towards base goals: full stick deflections
    (xr-standard units, 0..1), the distance and angle within which it eases
    off (linearly, down to ``min_push`` of the travel beyond the teleop
    deadzone), when a goal counts as reached, and how long script time waits
    for a goal past its segment's end. The ``lift_*`` settings do the same for
    lift goals (the right stick's y); a script without lift goals leaves them out."""

    drive_stick: float
    turn_stick: float
    ease_within_m: float
    ease_within_deg: float
    min_push: float
    reached_m: float
    reached_deg: float
    max_wait_s: float
    lift_stick: float | None = None
    lift_ease_within_m: float | None = None
    lift_reached_m: float | None = None

    def __post_init__(self) -> None:
        for name in ("drive_stick", "turn_stick", "min_push"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ScriptError(f"base_driving.{name}: must be in (0, 1]")
        for name in ("ease_within_m", "ease_within_deg", "reached_m", "reached_deg", "max_wait_s"):
            if not getattr(self, name) > 0.0:
                raise ScriptError(f"base_driving.{name}: must be > 0")
        lift = (self.lift_stick, self.lift_ease_within_m, self.lift_reached_m)
        if any(v is not None for v in lift):
            if any(v is None for v in lift):
                raise ScriptError("base_driving: give all of lift_stick, lift_ease_within_m and lift_reached_m, or none")
            if not 0.0 < self.lift_stick <= 1.0:  # type: ignore[operator]
                raise ScriptError("base_driving.lift_stick: must be in (0, 1]")
            if not (self.lift_ease_within_m > 0.0 and self.lift_reached_m > 0.0):  # type: ignore[operator]
                raise ScriptError("base_driving.lift_ease_within_m and lift_reached_m: must be > 0")


@dataclass(frozen=True, eq=False)
class Keyframe:
    """Both hands and the page buttons from time ``t_s`` on, and optionally a
    goal the base is steered to in this keyframe's segment."""

    t_s: float
    left: HandKey = field(default_factory=HandKey)
    right: HandKey = field(default_factory=HandKey)
    ui_estop: bool = False
    ui_release_stop: bool = False
    ui_pause: bool = False
    ui_episode_start: bool = False
    ui_episode_keep: bool = False
    ui_episode_discard: bool = False
    base: BaseGoal | None = None

    @property
    def hands(self) -> dict[str, HandKey]:
        return {"left": self.left, "right": self.right}

    @property
    def ui(self) -> dict[str, bool]:
        return {b: getattr(self, b) for b in UI_BUTTONS}


@dataclass(frozen=True, eq=False)
class OperatorScript:
    """A script: each hand's origin (m, operator FLU frame) and the keyframes
    (times strictly increasing, the first at 0)."""

    hand_origin_m: dict[str, np.ndarray]
    keyframes: tuple[Keyframe, ...]
    base_driving: BaseDriving | None = None

    def __post_init__(self) -> None:
        if set(self.hand_origin_m) != {"left", "right"} or any(v.shape != (3,) for v in self.hand_origin_m.values()):
            raise ScriptError("hand_origin_m: expected left and right, 3 finite numbers each")
        times = [k.t_s for k in self.keyframes]
        if not times or times[0] != 0.0 or any(b <= a for a, b in zip(times, times[1:])):
            raise ScriptError("keyframe times must start at 0 and strictly increase")
        if any(k.base is not None for k in self.keyframes) and self.base_driving is None:
            raise ScriptError("keyframes with base goals need base_driving")
        if any(k.base is not None and k.base.lift_to_m is not None for k in self.keyframes) and (
                self.base_driving is None or self.base_driving.lift_stick is None):
            raise ScriptError("keyframes with lift goals need base_driving's lift_stick, lift_ease_within_m and lift_reached_m")
        if self.keyframes[-1].base is not None:
            raise ScriptError("the last keyframe ends the script: it cannot carry a base goal")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "OperatorScript":
        """Builds a script from its YAML mapping, checked."""
        return config_from_mapping(cls, data, error=ScriptError)


def _rpy_matrix(rpy_deg: np.ndarray) -> np.ndarray:
    r, p, y = np.radians(rpy_deg)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _min_jerk(s: float) -> float:
    s = min(1.0, max(0.0, s))
    return s * s * s * (10 - 15 * s + 6 * s * s)


class ScriptedOperator:
    """Controller reports as a function of script time.

    Args:
        script: The operator script.
    """

    def __init__(self, script: OperatorScript, stick_deadzone: float = 0.0) -> None:
        self.origin = dict(script.hand_origin_m)
        self.keyframes: list[Keyframe] = list(script.keyframes)
        self.duration_s = self.keyframes[-1].t_s
        self.base_driving = script.base_driving
        self.stick_deadzone = float(stick_deadzone)

    def goal_at(self, t: float) -> tuple[BaseGoal | None, float]:
        """The base goal of the segment active at script time t (None if none)
        and that segment's end time."""
        a, _, _ = self._segment(t)
        i = self.keyframes.index(a)
        end = self.keyframes[i + 1].t_s if i + 1 < len(self.keyframes) else a.t_s
        return a.base, end

    def goal_reached(self, t: float, pose: tuple[float, float, float] | None, lift_m: float | None = None) -> bool:
        """True when the segment at t has no base goal, no pose (no lift
        height, for a lift goal) is known, or the goal is reached."""
        goal, _ = self.goal_at(t)
        if goal is None or self.base_driving is None:
            return True
        if goal.lift_to_m is not None:
            return lift_m is None or lift_stick(goal, lift_m, self.base_driving, self.stick_deadzone)[1]
        if pose is None:
            return True
        return goal_sticks(goal, pose, self.base_driving, self.stick_deadzone)[2]

    def _segment(self, t: float) -> tuple[Keyframe, Keyframe, float]:
        keys = self.keyframes
        if t >= keys[-1].t_s:
            return keys[-1], keys[-1], 0.0
        i = max(0, int(np.searchsorted([k.t_s for k in keys], t, side="right")) - 1)
        a, b = keys[i], keys[i + 1]
        return a, b, _min_jerk((t - a.t_s) / (b.t_s - a.t_s))

    def hand_pose(self, hand: str, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Position (m) and (x, y, z, w) orientation of a hand at script time t."""
        a, b, s = self._segment(t)
        ka, kb = a.hands[hand], b.hands[hand]
        pos = self.origin[hand] + (1 - s) * ka.offset_m + s * kb.offset_m
        rpy = (1 - s) * ka.rpy_deg + s * kb.rpy_deg
        return pos, matrix_to_quat(_rpy_matrix(rpy))

    def report(
        self, t: float, stamp_ns: int, seq: int, pose: tuple[float, float, float] | None = None, waiting: bool = False,
        lift_m: float | None = None,
    ) -> dict[str, Any]:
        """An XrControllers message for script time t.

        ``pose`` (x, y, yaw in the odometry frame) steers the base towards the
        segment's goal, if it has one; without a pose a goal segment leaves the
        base sticks at rest. ``waiting`` (script time held for a goal) rests
        every stick the goal does not use, so the lift moves only for its
        scripted time. A lift goal moves the lift (right stick y) from its
        reported height ``lift_m`` and rests the base."""
        a, _, _ = self._segment(t)
        sticks = {h: a.hands[h].stick.copy() for h in SIDES}
        if a.base is not None and a.base.lift_to_m is not None:
            sticks["left"][:] = 0.0
            sticks["right"][:] = 0.0
            if lift_m is not None and self.base_driving is not None:
                sticks["right"][1] = lift_stick(a.base, lift_m, self.base_driving, self.stick_deadzone)[0]
        elif a.base is not None:
            sticks["left"][:] = 0.0
            sticks["right"][0] = 0.0
            if waiting:
                sticks["right"][1] = 0.0
            if pose is not None and self.base_driving is not None:
                left, right_x, _ = goal_sticks(a.base, pose, self.base_driving, self.stick_deadzone)
                sticks["left"][:] = left
                sticks["right"][0] = right_x
        msg: dict[str, Any] = {
            "stamp_ns": stamp_ns,
            "frame_id": "operator",
            "seq": seq,
            "source": "scripted",
            "focused": True,
            **a.ui,
        }
        for hand in SIDES:
            pos, quat = self.hand_pose(hand, t)
            k = a.hands[hand]
            msg[hand] = {
                "connected": True,
                "epoch": 1,
                "pose_valid": True,
                "position": pos,
                "orientation": quat,
                "trigger": k.buttons["trigger"],
                "squeeze": k.buttons["squeeze"],
                "stick": sticks[hand],
                "primary": k.buttons["primary"] > 0.5,
                "secondary": k.buttons["secondary"] > 0.5,
                "stick_click": k.buttons["stick_click"] > 0.5,
                "menu": k.buttons["menu"] > 0.5,
                "pose_stamp_ns": stamp_ns,
                "input_stamp_ns": stamp_ns,
            }
        return msg

    def settled_windows(self, min_hold_s: float = 1.0) -> list[tuple[float, float]]:
        """Script intervals in which both hands hold still for at least
        ``min_hold_s`` (consecutive keyframes with equal poses)."""
        out = []
        for a, b in zip(self.keyframes, self.keyframes[1:]):
            same = all(
                np.array_equal(a.hands[h].offset_m, b.hands[h].offset_m) and np.array_equal(a.hands[h].rpy_deg, b.hands[h].rpy_deg)
                for h in SIDES
            )
            if same and b.t_s - a.t_s >= min_hold_s:
                out.append((a.t_s, b.t_s))
        return out


def _push(fraction: float, full: float, deadzone: float, min_push: float) -> float:
    """Stick deflection that asks for ``fraction`` (0..1) of ``full``'s effect,
    never less than ``min_push`` of the travel beyond the deadzone."""
    beyond = (full - deadzone) * max(min_push, min(1.0, fraction))
    return deadzone + beyond


def goal_sticks(
    goal: BaseGoal, pose: tuple[float, float, float], driving: BaseDriving, deadzone: float
) -> tuple[np.ndarray, float, bool]:
    """Sticks that steer the base towards ``goal`` from ``pose`` (x, y, yaw):
    the left stick (x, y) and the right stick's x (turning), xr-standard
    (forward is -y, turning left is -x), and whether the goal is reached.

    Turning: full turn stick, easing off within ``ease_within_deg``; reached
    within ``reached_deg``. Driving: the left stick pushes forward when the
    point lies ahead (within 45 degrees), easing off within ``ease_within_m``,
    and the right stick turns to keep the bearing; reached within
    ``reached_m`` or once the point is no longer ahead (passed)."""
    x, y, yaw = (float(v) for v in pose)
    left = np.zeros(2)
    if goal.turn_to_deg is not None:
        err = wrap_angle(np.radians(goal.turn_to_deg) - yaw)
        if abs(err) <= np.radians(driving.reached_deg):
            return left, 0.0, True
        push = _push(abs(err) / np.radians(driving.ease_within_deg), driving.turn_stick, deadzone, driving.min_push)
        return left, float(-np.sign(err) * push), False
    dx, dy = goal.drive_to_m[0] - x, goal.drive_to_m[1] - y  # type: ignore[index]
    dist = float(np.hypot(dx, dy))
    along = dx * np.cos(yaw) + dy * np.sin(yaw)
    if dist <= driving.reached_m or along <= driving.reached_m:
        return left, 0.0, True
    bearing = wrap_angle(float(np.arctan2(dy, dx)) - yaw)
    right_x = 0.0
    if abs(bearing) > np.radians(driving.reached_deg):
        right_x = float(-np.sign(bearing) * _push(abs(bearing) / np.radians(driving.ease_within_deg), driving.turn_stick,
                                                  deadzone, driving.min_push))
    if abs(bearing) < np.radians(45.0):
        left[1] = -_push(dist / driving.ease_within_m, driving.drive_stick, deadzone, driving.min_push)
    return left, right_x, False


def lift_stick(goal: BaseGoal, lift_m: float, driving: BaseDriving, deadzone: float) -> tuple[float, bool]:
    """The right stick's y (xr-standard: pushed forward, negative, raises the
    lift) that moves the lift from ``lift_m`` towards ``goal.lift_to_m``,
    easing off within ``lift_ease_within_m``, and whether it is there (within
    ``lift_reached_m``)."""
    err = float(goal.lift_to_m) - float(lift_m)  # type: ignore[arg-type]
    if abs(err) <= driving.lift_reached_m:  # type: ignore[operator]
        return 0.0, True
    push = _push(abs(err) / driving.lift_ease_within_m, driving.lift_stick, deadzone, driving.min_push)  # type: ignore[arg-type,operator]
    return float(-np.sign(err) * push), False


class ScriptClock:
    """Script time that runs with the wall clock but holds just before the end
    of a base-goal segment until the goal is reached, at most ``max_wait_s``.

    Args:
        operator: The scripted operator (its keyframes and goals).
    """

    def __init__(self, operator: ScriptedOperator) -> None:
        self.operator = operator
        self.t = 0.0
        self.waiting = False
        self._waited_s = 0.0

    def advance(self, dt_s: float, pose: tuple[float, float, float] | None, lift_m: float | None = None) -> float:
        """Moves script time on by ``dt_s`` (s of script time) unless a goal holds it; returns it."""
        op = self.operator
        goal, end = op.goal_at(self.t)
        t_next = self.t + max(0.0, dt_s)
        if t_next >= end and goal is not None and not op.goal_reached(self.t, pose, lift_m):
            self._waited_s += t_next - end
            limit = op.base_driving.max_wait_s if op.base_driving is not None else 0.0
            if self._waited_s < limit:
                self.t = float(np.nextafter(end, -np.inf))
                self.waiting = True
                return self.t
        if t_next >= end:
            self._waited_s = 0.0
        self.waiting = False
        self.t = t_next
        return self.t
