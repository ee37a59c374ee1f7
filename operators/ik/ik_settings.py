"""The IK solver's settings: the ``solver``, ``collision`` and ``joint_reference``
sections of ``models/alohamini2/ik.yaml``, checked when they are built
(the whole file is :class:`teledora.operators.ik.ik_config.IkConfig`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.errors import ConfigError
from teledora.operators.config import config_from_mapping
from teledora.operators.ik.global_search import GlobalSearchConfig
from teledora.operators.ik.joint_reference import JointReferenceConfig


class IkConfigError(ConfigError):
    """The IK configuration is missing a key or holds an invalid value."""


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

    def __post_init__(self) -> None:
        if not self.control_period_s > 0 or not self.arm_max_speed_rad_s > 0:
            raise IkConfigError("control_period_s and arm_max_speed_rad_s must be > 0")
        if not 0 < self.configuration_limit_gain <= 1:
            raise IkConfigError("configuration_limit_gain must be in (0, 1]")
        if min(self.position_cost, self.orientation_cost, self.lm_damping, self.posture_cost, self.regularization) < 0:
            raise IkConfigError("costs and damping must be >= 0")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "SolverConfig":
        """The ``solver`` section, checked."""
        return config_from_mapping(cls, data, "solver", IkConfigError)


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
    lift_guard_horizon_s: float
    lift_guard_latency_s: float

    def __post_init__(self) -> None:
        if not (self.lift_guard_horizon_s > 0 and self.lift_guard_latency_s >= 0):
            raise IkConfigError("lift_guard_horizon_s must be > 0 and lift_guard_latency_s >= 0")
        if not 0 < self.gain <= 1:
            raise IkConfigError("gain must be in (0, 1]")
        if self.minimum_distance_m < 0:
            raise IkConfigError("minimum_distance_m must be >= 0")
        if self.barrier_margin_m < 0:
            raise IkConfigError("barrier_margin_m must be >= 0")
        if self.detection_distance_m <= self.minimum_distance_m + self.barrier_margin_m:
            raise IkConfigError("detection_distance_m must exceed minimum_distance_m + barrier_margin_m")
        if self.guard_distance_m is not None and not 0 <= self.guard_distance_m <= self.minimum_distance_m:
            raise IkConfigError("guard_distance_m must be in [0, minimum_distance_m] (or null: no guard)")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "CollisionConfig":
        """The ``collision`` section, checked."""
        return config_from_mapping(cls, data, "collision", IkConfigError)


@dataclass(frozen=True)
class IkSettings:
    """The solver-side sections of ik.yaml."""

    solver: SolverConfig
    collision: CollisionConfig
    joint_reference: JointReferenceConfig
    global_search: GlobalSearchConfig | None  # None: no global fallback (the search's own solver)
