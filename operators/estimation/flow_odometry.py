"""Flow odometry: the onboard estimator as the `ekf` node runs it.

Feeds raw flow reports, gyro rates and wheel-odometry twists into a
:class:`~teledora.operators.estimation.planar_ekf.PlanarEkf`: corrects each flow report the
way the autopilot does (scalers, mounting yaw), drops readings outside the
sensor's validity window, advances the filter to each measurement's stamp and
counts why anything was not fused. The same object runs inside the node and in
the accuracy benchmark, so the published figures describe the shipped code.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import numpy.typing as npt

from teledora.operators.estimation.flow_model import FlowModel, FlowReadingInvalid
from teledora.operators.estimation.planar_ekf import EkfConfig, MeasurementRejected, PlanarEkf


class FlowOdometry:
    """Onboard flow + gyro (+ wheel odometry) estimator.

    Args:
        model: Flow sensor model used by the estimator (with or without the mounting offset).
        config: EKF noise settings.
        frame_id: Frame of the published pose (the profile's odom frame).
    """

    def __init__(self, model: FlowModel, config: EkfConfig, frame_id: str) -> None:
        self.model = model
        self.ekf = PlanarEkf(config, model)
        self.frame_id = frame_id
        self.fused: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.last_skip_reason = ""

    def _skip(self, kind: str, reason: str) -> None:
        self.skipped[kind] += 1
        self.last_skip_reason = f"{kind}: {reason}"

    def on_flow(self, stamp_ns: int, raw_flow: npt.ArrayLike, quality: int, ground_distance_m: float) -> bool:
        """Fuses one raw flow report (sensor axes). Returns True when it was fused."""
        body = self.model.corrected_flow(raw_flow)
        try:
            self.model.check_reading(body, quality, ground_distance_m)
        except FlowReadingInvalid as exc:
            self.ekf.predict_to(stamp_ns)
            self._skip("flow", str(exc))
            return False
        self.ekf.predict_to(stamp_ns)
        try:
            self.ekf.update_flow(body, ground_distance_m)
        except MeasurementRejected as exc:
            self._skip("flow", str(exc))
            return False
        self.fused["flow"] += 1
        return True

    def on_gyro(self, stamp_ns: int, angular_velocity: npt.ArrayLike) -> bool:
        """Fuses the yaw rate of one gyro report (FLU, rad/s)."""
        w = np.asarray(angular_velocity, dtype=float)
        self.ekf.predict_to(stamp_ns)
        try:
            self.ekf.update_gyro(float(w[2]))
        except MeasurementRejected as exc:
            self._skip("gyro", str(exc))
            return False
        self.fused["gyro"] += 1
        return True

    def on_odom(self, stamp_ns: int, vx: float, vy: float, wz: float) -> bool:
        """Fuses a wheel-odometry body twist."""
        self.ekf.predict_to(stamp_ns)
        try:
            self.ekf.update_odom_twist(vx, vy, wz)
        except MeasurementRejected as exc:
            self._skip("odom", str(exc))
            return False
        self.fused["odom"] += 1
        return True

    def pose(self, source: str = "onboard") -> dict[str, Any]:
        """The current estimate as a PoseEstimate message dict."""
        x, y, yaw, vx, vy, wz = (float(v) for v in self.ekf.x[:6])
        cov = self.ekf.pose_covariance()
        cov = 0.5 * (cov + cov.T)
        return {
            "stamp_ns": int(self.ekf.stamp_ns or 0),
            "frame_id": self.frame_id,
            "x": x, "y": y, "yaw": yaw, "vx": vx, "vy": vy, "wz": wz,
            "covariance": cov.reshape(9),
            "source": source,
        }

    def counters(self) -> dict[str, Any]:
        """Fused and skipped counts per input, for diagnostics."""
        return {
            "fused": dict(self.fused),
            "skipped": dict(self.skipped),
            "late_measurements": self.ekf.late_measurements,
            "skipped_gaps": self.ekf.skipped_gaps,
            "position_std_m": math.sqrt(max(0.0, float(self.ekf.P[0, 0] + self.ekf.P[1, 1]))),
            "gyro_bias_rad_s": float(self.ekf.x[6]),
        }
