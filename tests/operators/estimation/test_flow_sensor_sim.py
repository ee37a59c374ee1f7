"""Simulated flow sensor: model agreement, averaging, latency, dropouts, gain, determinism."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from teledora.models.config_files import load_estimation_config
from teledora.operators.estimation.flow_model import FlowModel
from teledora.operators.estimation.flow_sensor_sim import FlowSensorSim, FlowSimConfig, FlowSimConfigError, FlowSimNotReady

CONFIG = load_estimation_config()
MODEL = FlowModel(replace(CONFIG.flow_sensor, offset_m=(0.08, 0.05, 0.05), orient_yaw_rad=0.3))
QUIET = dict(flow_noise_rad_s=0.0, height_noise_m=0.0, dropout_probability=0.0, gyro_noise_rad_s=0.0)


def test_noise_free_reading_matches_model():
    sim = FlowSensorSim(MODEL, replace(CONFIG.flow_sim, **QUIET))
    sim.add_truth(0, 0.1, 0.0, 0.5)
    r = sim.read_flow(1_000)
    body = MODEL.body_flow(0.1, 0.0, 0.5, 0.05)
    np.testing.assert_allclose(MODEL.corrected_flow([r.flow_rate_x, r.flow_rate_y]), body, atol=1e-12)
    assert r.quality == 200 and r.ground_distance_m == pytest.approx(0.05)


def test_reading_averages_over_integration_interval():
    sim = FlowSensorSim(MODEL, replace(CONFIG.flow_sim, **QUIET))
    sim.add_truth(0, 0.0, 0.0, 0.0)
    sim.read_flow(0)
    sim.add_truth(10_000_000, 0.1, 0.0, 0.0)
    sim.add_truth(20_000_000, 0.0, 0.0, 0.0)
    r = sim.read_flow(20_000_000)
    assert r.integration_time_s == pytest.approx(0.02)
    body = MODEL.corrected_flow([r.flow_rate_x, r.flow_rate_y])
    assert body[1] == pytest.approx(0.05 / 0.05)  # mean vx 0.05 m/s over h 0.05 m


def test_gain_error_scales_reading():
    sim = FlowSensorSim(MODEL, replace(CONFIG.flow_sim, **QUIET, gain_x=0.9, gain_y=0.9))
    sim.add_truth(0, 0.1, 0.0, 0.0)
    r = sim.read_flow(0)
    ideal = MODEL.sensor_flow(MODEL.body_flow(0.1, 0.0, 0.0, 0.05))
    np.testing.assert_allclose([r.flow_rate_x, r.flow_rate_y], 0.9 * ideal, atol=1e-12)


def test_dropouts_and_saturation_report_lost_quality():
    sim = FlowSensorSim(MODEL, replace(CONFIG.flow_sim, **{**QUIET, "dropout_probability": 1.0}))
    sim.add_truth(0, 0.1, 0.0, 0.0)
    r = sim.read_flow(0)
    assert r.quality == 0 and (r.flow_rate_x, r.flow_rate_y) == (0.0, 0.0)
    fast = FlowSensorSim(MODEL, replace(CONFIG.flow_sim, **QUIET, saturation_rad_s=1.0))
    fast.add_truth(0, 0.2, 0.0, 0.0)  # 4 rad/s
    assert fast.read_flow(0).quality == 0
    assert fast.dropouts == 1


def test_seeded_runs_repeat():
    a, b = (FlowSensorSim(MODEL, replace(CONFIG.flow_sim, seed=3)) for _ in range(2))
    for s in (a, b):
        s.add_truth(0, 0.05, 0.01, 0.2)
    assert a.read_flow(0) == b.read_flow(0)
    np.testing.assert_array_equal(a.read_gyro(), b.read_gyro())


def test_gyro_bias_and_no_truth():
    sim = FlowSensorSim(MODEL, replace(CONFIG.flow_sim, **QUIET, gyro_bias_rad_s=0.01))
    with pytest.raises(FlowSimNotReady, match="no ground truth"):
        sim.read_flow(0)
    np.testing.assert_allclose(sim.read_gyro(0.5), [0, 0, 0.51])


def test_config_validation():
    with pytest.raises(FlowSimConfigError, match="dropout_probability"):
        replace(CONFIG.flow_sim, dropout_probability=1.5)
    with pytest.raises(FlowSimConfigError, match="unknown"):
        FlowSimConfig.from_dict({"noise": 1})
    with pytest.raises(FlowSimConfigError, match="delay_ms"):
        replace(CONFIG.flow_sim, delay_ms=-1.0)


# -- latency ---------------------------------------------------------------------------------

STEP_MS = 1000


def _forward_flow(delay_ms: float, read_every_ms: int, truth=lambda t_ms: 0.1 if t_ms >= STEP_MS else 0.0,
                  duration_ms: int = 1400) -> dict[int, float]:
    """Body flow_y (forward motion) reported at each read time (ms), truth sampled every 1 ms."""
    sim = FlowSensorSim(MODEL, replace(CONFIG.flow_sim, **QUIET, delay_ms=delay_ms))
    out = {}
    for t_ms in range(duration_ms + 1):
        if truth(t_ms) is not None:  # None: no ground truth yet at this instant
            sim.add_truth(t_ms * 1_000_000, truth(t_ms), 0.0, 0.0)
        if t_ms % read_every_ms == 0 and sim.ready(t_ms * 1_000_000):
            r = sim.read_flow(t_ms * 1_000_000)
            assert r.stamp_ns == t_ms * 1_000_000  # stamped when reported, describing the past
            out[t_ms] = float(MODEL.corrected_flow([r.flow_rate_x, r.flow_rate_y])[1])
    return out


@pytest.mark.parametrize("delay_ms", [0, 7, 30, 125])
def test_step_in_motion_appears_exactly_the_delay_later(delay_ms):
    flow = _forward_flow(delay_ms, read_every_ms=1)
    first = min(t for t, f in flow.items() if f != 0.0)
    assert first == STEP_MS + delay_ms
    assert flow[first] == pytest.approx(0.1 / 0.05)
    assert min(flow) == delay_ms  # no report until some truth is older than the delay


def test_delay_shifts_the_report_sequence_by_whole_periods():
    undelayed, delayed = _forward_flow(0, 20), _forward_flow(40, 20)
    assert {t: f for t, f in delayed.items()} == {t + 40: f for t, f in undelayed.items() if t + 40 <= 1400}


def test_delaying_the_report_equals_delaying_the_motion():
    """Reports every 20 ms with a 33 ms delay (not a multiple of the period) on a varying drive:
    identical to an undelayed sensor watching the same drive 33 ms later."""
    def drive(t_ms):
        return 0.08 * np.sin(t_ms / 90.0) + (0.05 if t_ms >= STEP_MS else 0.0)

    delayed = _forward_flow(33, 20, drive)
    shifted = _forward_flow(0, 20, lambda t_ms: drive(t_ms - 33) if t_ms >= 33 else None)
    assert set(delayed) == set(shifted) and min(delayed) == 40
    np.testing.assert_allclose([delayed[t] for t in sorted(delayed)], [shifted[t] for t in sorted(delayed)],
                               rtol=0, atol=1e-12)


def test_older_truth_rejected():
    sim = FlowSensorSim(MODEL, replace(CONFIG.flow_sim, **QUIET))
    sim.add_truth(10, 0.0, 0.0, 0.0)
    with pytest.raises(FlowSimConfigError, match="older"):
        sim.add_truth(5, 0.0, 0.0, 0.0)
