"""The randomised pick and place: where a seed puts the cube and its targets,
and the scripted demonstrator's keyframes that follow them.

:func:`placements` draws the cube's start and one target per episode in the
configured region of the stand, a pure function of the seed (numpy's PCG64
stream, drawn in order, so the first k placements do not depend on how many
episodes follow). Episode k picks the cube at placement k-1 and sets it down
at placement k: N episodes chain with no reset in between.

:func:`randomised_script` builds the operator script: the drive and lift
part of the base script, then each episode's keyframes with the hand's goals
shifted by where the placements lie. The demonstrator knows the placements
from the seed, as a person would see them; it never looks at the cube.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from teledora.operators.config import config_from_mapping
from teledora.operators.errors import ConfigError
from teledora.operators.evaluation.placement_judge import JudgeTolerances
from teledora.operators.xr.scripted_operator import HandKey, Keyframe, OperatorScript

MAX_DRAWS = 10_000  # rejection sampling for min_move_m; a sane region needs a handful


class PickPlaceConfigError(ConfigError):
    """The randomised pick-and-place config is malformed."""


@dataclass(frozen=True)
class Region:
    """An axis-aligned rectangle of the world frame (m)."""

    x_m: tuple[float, float]
    y_m: tuple[float, float]

    def __post_init__(self) -> None:
        for name in ("x_m", "y_m"):
            lo, hi = getattr(self, name)
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise PickPlaceConfigError(f"region.{name}: expected [low, high] with low < high")

    def contains(self, x: float, y: float) -> bool:
        return self.x_m[0] <= x <= self.x_m[1] and self.y_m[0] <= y <= self.y_m[1]

    def distance_to(self, x: float, y: float) -> float:
        """Distance from a point to the nearest point of the rectangle (0 inside)."""
        dx = max(self.x_m[0] - x, 0.0, x - self.x_m[1])
        dy = max(self.y_m[0] - y, 0.0, y - self.y_m[1])
        return math.hypot(dx, dy)


@dataclass(frozen=True)
class HandPlacement:
    """The left hand over the cube at ``nominal_position_m`` (world xy) has
    the script offset ``nominal_offset_m`` (operator FLU xy); its jaw-down
    orientation ``rpy_deg``."""

    nominal_position_m: tuple[float, float]
    nominal_offset_m: tuple[float, float]
    rpy_deg: tuple[float, float, float]


@dataclass(frozen=True)
class Phase:
    """One keyframe of an episode: time from its START, where the hand is
    (home, pick or place), its height from the hand's origin, the trigger,
    and the page's START / KEEP levels."""

    t_s: float
    at: str
    dz_m: float
    grip: bool = False
    start: bool = False
    keep: bool = False

    def __post_init__(self) -> None:
        if self.at not in ("home", "pick", "place"):
            raise PickPlaceConfigError(f"at: expected home, pick or place, got {self.at!r}")
        if not (math.isfinite(self.t_s) and self.t_s >= 0.0 and math.isfinite(self.dz_m)):
            raise PickPlaceConfigError("t_s and dz_m: expected finite numbers, t_s >= 0")


def _check_phases(name: str, phases: Sequence[Phase]) -> None:
    times = [p.t_s for p in phases]
    if not phases or times[0] != 0.0 or any(b <= a for a, b in zip(times, times[1:])):
        raise PickPlaceConfigError(f"{name}: times must start at 0 and strictly increase")
    if not phases[0].start or sum(p.start for p in phases) != 1 or sum(p.keep for p in phases) != 1:
        raise PickPlaceConfigError(f"{name}: one START (the first keyframe) and one KEEP")


@dataclass(frozen=True)
class PickPlaceConfig:
    """models/alohamini2/pick_place_random.yaml."""

    object: str
    region: Region
    min_move_m: float
    script: str
    hand: HandPlacement
    first_episode: tuple[Phase, ...]
    episode: tuple[Phase, ...]
    between_s: float
    judge: JudgeTolerances

    def __post_init__(self) -> None:
        if not self.min_move_m >= 0.0:
            raise PickPlaceConfigError("min_move_m: must be >= 0")
        r = self.region
        if self.min_move_m > math.hypot(r.x_m[1] - r.x_m[0], r.y_m[1] - r.y_m[0]) / 2:
            raise PickPlaceConfigError("min_move_m: more than half the region's diagonal leaves too few placements")
        if not self.between_s > 0.0:
            raise PickPlaceConfigError("between_s: must be > 0")
        _check_phases("first_episode", self.first_episode)
        _check_phases("episode", self.episode)
        if self.episode[0].at != "pick":
            raise PickPlaceConfigError("episode: later episodes start over the cube (at: pick)")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "PickPlaceConfig":
        return config_from_mapping(cls, data, error=PickPlaceConfigError)


def placements(config: PickPlaceConfig, seed: int, episodes: int) -> list[tuple[float, float]]:
    """The cube's start and each episode's target (world xy, m): ``episodes + 1``
    points in the region, consecutive ones at least ``min_move_m`` apart.

    Raises:
        ValueError: a negative seed or episode count.
    """
    if seed < 0 or episodes < 0:
        raise ValueError("seed and episodes must be >= 0")
    rng = np.random.Generator(np.random.PCG64(seed))
    (x0, x1), (y0, y1) = config.region.x_m, config.region.y_m
    out: list[tuple[float, float]] = []
    while len(out) < episodes + 1:
        for _ in range(MAX_DRAWS):
            p = (float(rng.uniform(x0, x1)), float(rng.uniform(y0, y1)))
            if not out or math.dist(p, out[-1]) >= config.min_move_m:
                break
        else:  # unreachable for a region the config check admits
            raise ValueError(f"no placement {config.min_move_m} m from the last in {MAX_DRAWS} draws")
        out.append(p)
    return out


def hand_offset(config: PickPlaceConfig, base_yaw_rad: float, xy: tuple[float, float]) -> tuple[float, float]:
    """The hand's script offset (operator FLU xy) over a world point, the base
    facing ``base_yaw_rad``: the nominal offset plus the point's shift from
    the nominal position, turned into the base's frame."""
    dx = xy[0] - config.hand.nominal_position_m[0]
    dy = xy[1] - config.hand.nominal_position_m[1]
    c, s = math.cos(base_yaw_rad), math.sin(base_yaw_rad)
    ox, oy = config.hand.nominal_offset_m
    return ox + c * dx + s * dy, oy - s * dx + c * dy


def _base_yaw_rad(keyframes: Sequence[Keyframe]) -> float:
    turns = [k.base.turn_to_deg for k in keyframes if k.base is not None and k.base.turn_to_deg is not None]
    if not turns:
        raise PickPlaceConfigError("the base script's drive part has no turn_to_deg goal: the base's heading is unknown")
    return math.radians(turns[-1])


def randomised_script(config: PickPlaceConfig, base: OperatorScript, spots: Sequence[tuple[float, float]]) -> OperatorScript:
    """The base script's keyframes before its first episode START, then one
    episode per pair of consecutive ``spots`` (from :func:`placements`), then
    a last keyframe ``between_s`` after the last one."""
    if len(spots) < 2:
        raise ValueError("spots: the start and at least one target")
    first_start = next((k.t_s for k in base.keyframes if k.ui_episode_start), None)
    if first_start is None:
        raise PickPlaceConfigError(f"{config.script}: no episode START ends its drive part")
    keys = [k for k in base.keyframes if k.t_s < first_start]
    yaw = _base_yaw_rad(keys)
    rpy = np.array(config.hand.rpy_deg, dtype=float)
    t0 = first_start
    for k, (pick, place) in enumerate(zip(spots, spots[1:])):
        phases = config.first_episode if k == 0 else config.episode
        goal = {"pick": hand_offset(config, yaw, pick), "place": hand_offset(config, yaw, place)}
        for p in phases:
            if p.at == "home":
                hand = HandKey(offset_m=np.array([0.0, 0.0, p.dz_m]) if p.dz_m else np.zeros(3))
            else:
                hand = HandKey(offset_m=np.array([*goal[p.at], p.dz_m]), rpy_deg=rpy, trigger=1.0 if p.grip else 0.0)
            keys.append(Keyframe(t_s=round(t0 + p.t_s, 6), left=hand, ui_episode_start=p.start, ui_episode_keep=p.keep))
        t0 = keys[-1].t_s + config.between_s
    last = keys[-1]
    keys.append(Keyframe(t_s=round(t0, 6), left=last.left))
    return OperatorScript(hand_origin_m=dict(base.hand_origin_m), keyframes=tuple(keys), base_driving=base.base_driving)


SEED_ENV = "TELEDORA_PICK_PLACE_SEED"
EPISODES_ENV = "TELEDORA_PICK_PLACE_EPISODES"


def scenario_from_env(env: Mapping[str, str]) -> tuple[int, int] | None:
    """(seed, episodes) of the randomised scenario from the variables the
    demo command sets for the sim and xr nodes; None when no seed is set.

    Raises:
        PickPlaceConfigError: a seed or episode count that is not a whole number
            (episodes >= 1, seed >= 0).
    """
    raw_seed, raw_episodes = env.get(SEED_ENV, "").strip(), env.get(EPISODES_ENV, "1").strip() or "1"
    if not raw_seed:
        return None
    try:
        seed, episodes = int(raw_seed), int(raw_episodes)
    except ValueError:
        raise PickPlaceConfigError(f"{SEED_ENV}={raw_seed!r}, {EPISODES_ENV}={raw_episodes!r}: expected whole numbers") from None
    if seed < 0 or episodes < 1:
        raise PickPlaceConfigError(f"{SEED_ENV} must be >= 0 and {EPISODES_ENV} >= 1 (got {seed}, {episodes})")
    return seed, episodes
