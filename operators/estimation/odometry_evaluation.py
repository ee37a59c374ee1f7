"""One estimate-vs-truth evaluation: associate, (estimate the lag), align, measure.

This is the pure core of ``teledora eval odometry``: it takes two
trajectories already read from a recording and returns the errors and a
JSON-ready summary that names every choice that shaped the numbers
(association method and tolerance, lag, alignment, planar or spatial, the
spacing that keeps noise out of the distance travelled).

Drift is reported twice: anchored at the start (the first estimate pose put
on the truth pose at the same instant, then the final error: what a robot
that knows where it started ends up believing) and after the chosen
alignment (a least-squares fit over the whole run pulls the end towards the
truth and typically halves the final error of a steady drift).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from teledora.operators.errors import TeledoraError
from teledora.operators.estimation.trajectory_alignment import ALIGNMENTS, AlignmentError, SimilarityTransform, align
from teledora.operators.estimation.trajectory_association import (
    ASSOCIATION_METHODS,
    Association,
    AssociationError,
    Trajectory,
    associate,
    estimate_lag,
)
from teledora.operators.estimation.trajectory_distance import DEFAULT_MIN_STEP_M, DistanceError
from teledora.operators.estimation.trajectory_metrics import (
    Drift,
    ErrorStats,
    RelativeErrors,
    drift,
    path_length,
    position_errors,
    relative_errors,
    yaw_errors,
)


class EvaluationError(TeledoraError, ValueError):
    """The evaluation cannot run with these inputs or settings."""


@dataclass(frozen=True)
class EvaluationConfig:
    """Settings of one evaluation (all times in seconds, distances in metres)."""

    association: str = "interpolate"
    max_diff_s: float = 0.02
    lag_s: float = 0.0
    estimate_lag: bool = False
    max_lag_s: float = 0.5
    lag_step_s: float = 0.005
    alignment: str = "se2"
    dims: int = 2
    rpe_delta_m: float = 1.0
    path_min_step_m: float = DEFAULT_MIN_STEP_M

    def __post_init__(self) -> None:
        if self.association not in ASSOCIATION_METHODS:
            raise EvaluationError(f"association must be one of {ASSOCIATION_METHODS}, got {self.association!r}")
        if self.alignment not in ALIGNMENTS:
            raise EvaluationError(f"alignment must be one of {ALIGNMENTS}, got {self.alignment!r}")
        if self.dims not in (2, 3):
            raise EvaluationError(f"dims must be 2 or 3, got {self.dims}")
        if not self.path_min_step_m >= 0.0:
            raise EvaluationError(f"path_min_step_m must be >= 0, got {self.path_min_step_m}")


@dataclass(frozen=True)
class EvaluationResult:
    """Everything an evaluation computed (arrays for plots, stats for the summary)."""

    config: EvaluationConfig
    association: Association
    lag_estimated: bool
    transform: SimilarityTransform
    aligned_estimate: Trajectory
    position_errors: np.ndarray
    yaw_errors: np.ndarray
    relative: RelativeErrors
    drift: Drift
    drift_from_start: Drift
    truth_count: int

    def summary(self) -> dict[str, Any]:
        """A JSON-ready summary of the evaluation and how it was made."""
        a = self.association
        est = a.estimate
        duration = float((est.stamps_ns[-1] - est.stamps_ns[0]) / 1e9) if len(est) > 1 else 0.0
        return {
            "association": {
                "method": a.method,
                "max_diff_s": a.max_diff_s,
                "lag_s": a.lag_s,
                "lag_estimated": self.lag_estimated,
                "estimate_samples": a.estimate_count,
                "truth_samples": self.truth_count,
                "associated_samples": len(est),
                "fraction_associated": a.fraction,
            },
            "alignment": self.transform.as_dict(),
            "dims": self.config.dims,
            "duration_s": duration,
            "ape_m": ErrorStats.of(self.position_errors).as_dict(),
            "yaw_error_rad": ErrorStats.of(self.yaw_errors).as_dict(),
            "rpe": {
                "delta_m": self.relative.delta_m,
                "translation_m_per_m": ErrorStats.of(self.relative.translation_per_m).as_dict(),
                "yaw_rad_per_m": ErrorStats.of(self.relative.yaw_per_m).as_dict(),
            },
            "drift": {
                "path_length_m": self.drift.path_length_m,
                "path_min_step_m": self.config.path_min_step_m,
                "anchored_at_start": _drift_dict(self.drift_from_start),
                "after_alignment": {"alignment": self.transform.method, **_drift_dict(self.drift)},
            },
        }


def _drift_dict(d: Drift) -> dict[str, float]:
    return {"final_error_m": d.final_error_m, "percent_of_distance": d.percent_of_distance,
            "final_yaw_error_rad": d.final_yaw_error_rad}


def _aligned_rmse(config: EvaluationConfig) -> Callable[[Association], float]:
    def cost(a: Association) -> float:
        try:
            t = align(a.estimate, a.truth, config.alignment)
        except AlignmentError:
            return float("inf")
        e = position_errors(t.apply(a.estimate), a.truth, config.dims)
        return float(np.sqrt(np.mean(e * e)))

    return cost


def evaluate_odometry(
    estimate: Trajectory,
    truth: Trajectory,
    config: EvaluationConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> EvaluationResult:
    """Compares ``estimate`` with ``truth`` as ``config`` says.

    Raises:
        EvaluationError: nothing associates, or the alignment is degenerate.
    """
    cfg = config or EvaluationConfig()
    say = progress or (lambda _msg: None)
    lag = cfg.lag_s
    try:
        if cfg.estimate_lag:
            say(f"estimating lag in ±{cfg.max_lag_s} s (step {cfg.lag_step_s} s)")
            lag, cost = estimate_lag(
                estimate,
                truth,
                _aligned_rmse(cfg),
                max_lag_s=cfg.max_lag_s,
                step_s=cfg.lag_step_s,
                method=cfg.association,  # type: ignore[arg-type]
                max_diff_s=cfg.max_diff_s,
            )
            say(f"lag {lag * 1e3:.2f} ms (aligned RMSE {cost:.4f} m)")
        assoc = associate(estimate, truth, method=cfg.association, max_diff_s=cfg.max_diff_s, lag_s=lag)  # type: ignore[arg-type]
    except AssociationError as exc:
        raise EvaluationError(str(exc)) from None
    if len(assoc.estimate) < 2:
        raise EvaluationError(
            f"only {len(assoc.estimate)} of {len(estimate)} estimate samples have truth within {cfg.max_diff_s} s "
            f"(lag {lag} s): are both topics on the host clock?"
        )
    say(f"associated {len(assoc.estimate)}/{len(estimate)} samples ({assoc.fraction:.1%})")
    try:
        transform = align(assoc.estimate, assoc.truth, cfg.alignment)
    except AlignmentError as exc:
        raise EvaluationError(str(exc)) from None
    aligned = transform.apply(assoc.estimate)
    anchored = align(assoc.estimate, assoc.truth, "origin").apply(assoc.estimate)
    step = cfg.path_min_step_m
    try:
        travelled = path_length(assoc.truth, cfg.dims, step)
        relative = relative_errors(aligned, assoc.truth, cfg.rpe_delta_m, cfg.dims, step, travelled)
        drift_aligned = drift(aligned, assoc.truth, cfg.dims, step, travelled)
        drift_anchored = drift(anchored, assoc.truth, cfg.dims, step, travelled)
    except DistanceError as exc:
        raise EvaluationError(str(exc)) from None
    return EvaluationResult(
        config=cfg,
        association=assoc,
        lag_estimated=cfg.estimate_lag,
        transform=transform,
        aligned_estimate=aligned,
        position_errors=position_errors(aligned, assoc.truth, cfg.dims),
        yaw_errors=yaw_errors(aligned, assoc.truth),
        relative=relative,
        drift=drift_aligned,
        drift_from_start=drift_anchored,
        truth_count=len(truth),
    )
