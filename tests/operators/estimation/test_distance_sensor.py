"""DISTANCE_SENSOR fields: covariance semantics of MAVLink common.xml (cm², 255 = unknown)."""

from __future__ import annotations

import pytest

from teledora.operators.estimation.distance_sensor import (
    COVARIANCE_UNKNOWN,
    DistanceSensorError,
    covariance_cm2,
    distance_report,
)


def test_unknown_noise_is_255_never_0():
    assert COVARIANCE_UNKNOWN == 255
    assert covariance_cm2(None) == 255


@pytest.mark.parametrize("std_m, expected", [
    (0.0, 1),       # rounding to whole cm alone: 1/12 cm², rounded up
    (0.0005, 1),    # 0.0025 + 0.083 cm²
    (0.01, 2),      # 1 + 0.083 cm²
    (0.02, 5),      # 4 + 0.083 cm²
    (0.06, 37),     # the 6 cm the MAVLink description mentions: 36 + 0.083 cm²
    (0.15, 226),    # 225 + 0.083 cm²
])
def test_known_noise_gives_variance_in_cm2(std_m, expected):
    assert covariance_cm2(std_m) == expected


@pytest.mark.parametrize("bad", [-0.001, float("nan"), float("inf"), 0.16])
def test_unusable_noise_rejected(bad):
    with pytest.raises(DistanceSensorError, match="distance_sensor_std_m"):
        covariance_cm2(bad)


def test_report_rounds_to_centimetres():
    r = distance_report(0.0549, 0.01, 1.0, None)
    assert (r.min_distance_cm, r.max_distance_cm, r.current_distance_cm, r.covariance_cm2) == (1, 100, 5, 255)
    assert distance_report(700.0, 0.01, 1.0, 0.002).current_distance_cm == 65535
