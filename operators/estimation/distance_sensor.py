"""MAVLink DISTANCE_SENSOR fields for the flow sensor's ground distance.

ArduPilot reads the height for flow fusion from a downward rangefinder; with
RNGFND1_TYPE = 10 that rangefinder is this message. Its fields (MAVLink
common.xml): ``min_distance``, ``max_distance`` and ``current_distance`` in
whole centimetres, ``covariance`` the measurement variance in cm² as a uint8,
with 255 (UINT8_MAX) meaning unknown. A covariance of 0 would claim a perfect
reading; a reading in whole centimetres is never that, because rounding to the
centimetre alone has a variance of 1/12 cm².
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from teledora.operators.errors import ConfigError

COVARIANCE_UNKNOWN = 255
"""DISTANCE_SENSOR.covariance when the variance is not known (UINT8_MAX)."""

ROUNDING_VARIANCE_CM2 = 1.0 / 12.0
"""Variance added by reporting a continuous distance in whole centimetres."""


class DistanceSensorError(ConfigError):
    """A distance-sensor setting is unusable."""


def covariance_cm2(std_m: float | None) -> int:
    """The DISTANCE_SENSOR ``covariance`` for a rangefinder of 1-sigma noise ``std_m``.

    The sensor's variance plus the centimetre rounding, rounded up to a whole
    cm² (so never 0); ``None`` (noise unknown) gives 255.

    Raises:
        DistanceSensorError: ``std_m`` is negative, not finite, or so large that
            the variance does not fit below 255 cm² (σ above about 15.9 cm).
    """
    if std_m is None:
        return COVARIANCE_UNKNOWN
    if not (math.isfinite(std_m) and std_m >= 0.0):
        raise DistanceSensorError(f"distance_sensor_std_m must be a finite number >= 0 (m), got {std_m!r}")
    variance = (100.0 * std_m) ** 2 + ROUNDING_VARIANCE_CM2
    cm2 = math.ceil(variance - 1e-9)
    if cm2 >= COVARIANCE_UNKNOWN:
        raise DistanceSensorError(
            f"distance_sensor_std_m {std_m} m gives {variance:.0f} cm², beyond what DISTANCE_SENSOR can carry (254)"
        )
    return cm2


@dataclass(frozen=True)
class DistanceReport:
    """The DISTANCE_SENSOR fields of one reading (cm, cm², MAVLink units)."""

    min_distance_cm: int
    max_distance_cm: int
    current_distance_cm: int
    covariance_cm2: int


def distance_report(ground_distance_m: float, min_distance_m: float, max_distance_m: float,
                    std_m: float | None) -> DistanceReport:
    """Fields for a ground distance (rounded to the centimetre, clamped to uint16)."""
    def cm(v: float) -> int:
        return max(0, min(65535, round(v * 100.0)))

    return DistanceReport(cm(min_distance_m), cm(max_distance_m), cm(ground_distance_m), covariance_cm2(std_m))
