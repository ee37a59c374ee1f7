"""Distance travelled: exact on clean paths, not inflated by motion-capture noise."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teledora.operators.estimation.trajectory_association import Trajectory
from teledora.operators.estimation.trajectory_distance import DistanceError, cumulative_distance, kept_indices

RATE_HZ = 120.0
SIGMA_M = 0.0003  # OptiTrack-class noise per axis, as the simulated rig uses


def _noisy(t_s: np.ndarray, x: np.ndarray, y: np.ndarray, seed: int = 1, sigma: float = SIGMA_M) -> Trajectory:
    rng = np.random.default_rng(seed)
    n = len(t_s)
    return Trajectory.from_planar(np.round(t_s * 1e9).astype(np.int64), x + rng.normal(0, sigma, n),
                                  y + rng.normal(0, sigma, n), np.zeros(n))


def test_slow_straight_metre_is_one_metre_despite_noise():
    t = np.arange(0, 20.0 + 1e-9, 1 / RATE_HZ)  # 1.0 m at 0.05 m/s: 0.42 mm per frame
    truth = _noisy(t, 0.05 * t, np.zeros_like(t))
    raw = cumulative_distance(truth, min_step_m=0.0)[-1]
    assert raw > 1.4  # summing raw steps counts the noise: about 1.6 m
    assert cumulative_distance(truth)[-1] == pytest.approx(1.0, abs=0.002)


def test_standing_still_travels_nothing():
    t = np.arange(0, 60.0, 1 / RATE_HZ)
    truth = _noisy(t, np.full_like(t, 0.4), np.full_like(t, -1.0))
    assert cumulative_distance(truth, min_step_m=0.0)[-1] > 3.0  # a minute of noise, summed raw
    assert cumulative_distance(truth)[-1] < 0.002  # only the final tail, within noise


def test_circle_within_the_chord_bound():
    r, w = 0.5, 0.2  # 0.1 m/s around a 0.5 m radius, one full turn
    t = np.arange(0, 2 * np.pi / w, 1 / RATE_HZ)
    truth = _noisy(t, r * np.cos(w * t), r * np.sin(w * t))
    exact = r * w * t[-1]
    got = cumulative_distance(truth)[-1]
    assert got == pytest.approx(exact * (1 - 0.05**2 / (24 * r * r)), rel=5e-4)


def test_cumulative_is_monotone_and_exact_on_a_clean_line():
    t = np.arange(0, 5.0, 0.01)
    truth = Trajectory.from_planar(np.round(t * 1e9).astype(np.int64), 0.3 * t, 0.4 * t, np.zeros_like(t))
    d = cumulative_distance(truth)
    np.testing.assert_allclose(d, 0.5 * t, atol=1e-12)
    assert cumulative_distance(truth, dims=3)[-1] == pytest.approx(0.5 * t[-1])


def test_settings_checked():
    truth = Trajectory.from_planar([0, 1], [0, 1], [0, 0], [0, 0])
    with pytest.raises(DistanceError):
        cumulative_distance(truth, dims=1)
    with pytest.raises(DistanceError):
        kept_indices(truth.positions, -0.1)
    assert len(cumulative_distance(truth.select(slice(0, 0)))) == 0


_steps = st.lists(st.tuples(st.floats(-0.2, 0.2), st.floats(-0.2, 0.2)), min_size=1, max_size=200)


@settings(max_examples=150, deadline=None)
@given(steps=_steps, min_step=st.floats(0.0, 0.3))
def test_never_longer_than_the_raw_path_and_never_decreasing(steps, min_step):
    xy = np.cumsum(np.array([(0.0, 0.0)] + steps), axis=0)
    stamps = np.arange(len(xy), dtype=np.int64) * 10_000_000
    traj = Trajectory.from_planar(stamps, xy[:, 0], xy[:, 1], np.zeros(len(xy)))
    d = cumulative_distance(traj, min_step_m=min_step)
    raw = cumulative_distance(traj, min_step_m=0.0)
    assert d[0] == 0.0 and np.all(np.diff(d) >= -1e-12)
    assert d[-1] <= raw[-1] + 1e-9  # chords never exceed the path they cut (triangle inequality)
    kept = kept_indices(traj.positions[:, :2], min_step)
    gaps = np.linalg.norm(np.diff(traj.positions[kept, :2], axis=0), axis=1)
    assert np.all(gaps >= min_step - 1e-12)
