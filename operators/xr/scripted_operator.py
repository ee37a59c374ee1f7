"""A deterministic stand-in for a person in a VR headset.

A script is a list of keyframes: at time ``t_s`` each hand has a pose offset
(metres and degrees of roll/pitch/yaw, relative to that hand's origin), stick
values, and held buttons. Poses blend between keyframes with a minimum-jerk
profile, so the arm targets start and stop smoothly; sticks and buttons hold
the value of the last keyframe passed. The result is a pure function of time,
which makes a scripted run reproducible.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from teledora.operators.errors import ConfigError
from teledora.operators.geometry import matrix_to_quat
from teledora.operators.model.sides import SIDES
from teledora.operators.config import config_from_mapping

BUTTONS = ("trigger", "squeeze", "primary", "secondary", "stick_click", "menu")
UI_BUTTONS = ("ui_estop", "ui_release_stop", "ui_pause")


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
class Keyframe:
    """Both hands and the page buttons from time ``t_s`` on."""

    t_s: float
    left: HandKey = field(default_factory=HandKey)
    right: HandKey = field(default_factory=HandKey)
    ui_estop: bool = False
    ui_release_stop: bool = False
    ui_pause: bool = False

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

    def __post_init__(self) -> None:
        if set(self.hand_origin_m) != {"left", "right"} or any(v.shape != (3,) for v in self.hand_origin_m.values()):
            raise ScriptError("hand_origin_m: expected left and right, 3 finite numbers each")
        times = [k.t_s for k in self.keyframes]
        if not times or times[0] != 0.0 or any(b <= a for a, b in zip(times, times[1:])):
            raise ScriptError("keyframe times must start at 0 and strictly increase")

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

    def __init__(self, script: OperatorScript) -> None:
        self.origin = dict(script.hand_origin_m)
        self.keyframes: list[Keyframe] = list(script.keyframes)
        self.duration_s = self.keyframes[-1].t_s

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

    def report(self, t: float, stamp_ns: int, seq: int) -> dict[str, Any]:
        """An XrControllers message for script time t."""
        a, _, _ = self._segment(t)
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
                "stick": k.stick,
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
