"""The IK solver's settings: the ``solver``, ``collision`` and ``joint_reference``
sections of ``models/alohamini2/ik.yaml``, checked when they are parsed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.ik.global_search import GlobalSearchConfig
from teledora.operators.ik.joint_reference import JointReferenceConfig


class IkConfigError(ValueError):
    """The IK configuration is missing a key or holds an invalid value."""


def _req(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise IkConfigError(f"{where}: missing key {key!r}")
    return data[key]


@dataclass(frozen=True)
class SolverConfig:
    """The ``solver`` section: model, QP solver, task costs, speed cap, backtracking, frozen joints."""

    model: str
    add_floor: bool
    qp_solver: str
    control_period_s: float
    position_cost: float
    orientation_cost: float
    lm_damping: float
    posture_cost: float
    regularization: float
    configuration_limit_gain: float
    arm_max_speed_rad_s: float
    backtracking_steps: int
    frozen_joints: tuple[str, ...]

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "SolverConfig":
        w = "solver"
        cfg = cls(
            model=str(_req(data, "model", w)),
            add_floor=bool(_req(data, "add_floor", w)),
            qp_solver=str(_req(data, "qp_solver", w)),
            control_period_s=float(_req(data, "control_period_s", w)),
            position_cost=float(_req(data, "position_cost", w)),
            orientation_cost=float(_req(data, "orientation_cost", w)),
            lm_damping=float(_req(data, "lm_damping", w)),
            posture_cost=float(_req(data, "posture_cost", w)),
            regularization=float(_req(data, "regularization", w)),
            configuration_limit_gain=float(_req(data, "configuration_limit_gain", w)),
            arm_max_speed_rad_s=float(_req(data, "arm_max_speed_rad_s", w)),
            backtracking_steps=int(_req(data, "backtracking_steps", w)),
            frozen_joints=tuple(_req(data, "frozen_joints", w)),
        )
        if not cfg.control_period_s > 0 or not cfg.arm_max_speed_rad_s > 0:
            raise IkConfigError("solver: control_period_s and arm_max_speed_rad_s must be > 0")
        if not 0 < cfg.configuration_limit_gain <= 1:
            raise IkConfigError("solver: configuration_limit_gain must be in (0, 1]")
        if min(cfg.position_cost, cfg.orientation_cost, cfg.lm_damping, cfg.posture_cost, cfg.regularization) < 0:
            raise IkConfigError("solver: costs and damping must be >= 0")
        return cfg


@dataclass(frozen=True)
class CollisionConfig:
    """The ``collision`` section: the clearance barrier's gain, distances and margin,
    and the guard distance. Which geom pairs are checked is not configured here: it is
    every pair the model's collision filter allows that an arm joint moves
    (``collision_pairs.CollisionPairs.from_model``)."""

    enabled: bool
    gain: float
    minimum_distance_m: float
    detection_distance_m: float
    guard_distance_m: float | None
    barrier_margin_m: float

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "CollisionConfig":
        w = "collision"
        for key in ("groups", "pairs"):
            if key in data:
                raise IkConfigError(f"{w}: {key!r} is no longer read: the pairs come from the model's collision filter "
                                    "(contype/conaffinity, parent-child, <exclude>); edit the model instead")
        guard = _req(data, "guard_distance_m", w)
        cfg = cls(
            enabled=bool(_req(data, "enabled", w)),
            gain=float(_req(data, "gain", w)),
            minimum_distance_m=float(_req(data, "minimum_distance_m", w)),
            detection_distance_m=float(_req(data, "detection_distance_m", w)),
            guard_distance_m=None if guard is None else float(guard),
            barrier_margin_m=float(_req(data, "barrier_margin_m", w)),
        )
        if not 0 < cfg.gain <= 1:
            raise IkConfigError("collision: gain must be in (0, 1]")
        if cfg.minimum_distance_m < 0:
            raise IkConfigError("collision: minimum_distance_m must be >= 0")
        if cfg.barrier_margin_m < 0:
            raise IkConfigError("collision: barrier_margin_m must be >= 0")
        if cfg.detection_distance_m <= cfg.minimum_distance_m + cfg.barrier_margin_m:
            raise IkConfigError("collision: detection_distance_m must exceed minimum_distance_m + barrier_margin_m")
        if cfg.guard_distance_m is not None and not 0 <= cfg.guard_distance_m <= cfg.minimum_distance_m:
            raise IkConfigError("collision: guard_distance_m must be in [0, minimum_distance_m] (or null: no guard)")
        return cfg


@dataclass(frozen=True)
class IkSettings:
    """The solver-side sections of ik.yaml."""

    solver: SolverConfig
    collision: CollisionConfig
    joint_reference: JointReferenceConfig
    global_search: GlobalSearchConfig | None = None  # absent: no global fallback

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "IkSettings":
        search = data.get("global_search")
        return cls(
            SolverConfig.from_mapping(_req(data, "solver", "ik")),
            CollisionConfig.from_mapping(_req(data, "collision", "ik")),
            JointReferenceConfig.from_mapping(_req(data, "joint_reference", "ik")),
            None if search is None else GlobalSearchConfig.from_mapping(search),
        )
