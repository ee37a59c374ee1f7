"""Trajectories with errors known in closed form, shared by the trajectory tests."""

from __future__ import annotations

import numpy as np

from teledora.operators.estimation.trajectory_association import Trajectory

RATE_HZ = 100.0
SPEED_M_S = 0.5
DURATION_S = 10.0


def stamps(start_s: float = 0.0, end_s: float = DURATION_S, rate_hz: float = RATE_HZ) -> np.ndarray:
    n = int(round((end_s - start_s) * rate_hz)) + 1
    return np.round((start_s + np.arange(n) / rate_hz) * 1e9).astype(np.int64)


def line(t_ns: np.ndarray, scale: float = 1.0, lag_s: float = 0.0, offset=(0.0, 0.0)) -> Trajectory:
    """Straight line along +x at SPEED_M_S from the origin, optionally scaled, lagged, offset."""
    t = t_ns / 1e9 - lag_s
    x = scale * SPEED_M_S * t + offset[0]
    return Trajectory.from_planar(t_ns, x, np.full_like(x, offset[1]), np.zeros_like(x))


def lissajous(t_ns: np.ndarray, lag_s: float = 0.0) -> Trajectory:
    """A figure-eight with varying speed and heading (lag is observable on it)."""
    t = t_ns / 1e9 - lag_s
    x, y = 2.0 * np.sin(0.6 * t), 1.0 * np.sin(1.2 * t)
    yaw = np.arctan2(1.2 * np.cos(1.2 * t), 1.2 * np.cos(0.6 * t))
    return Trajectory.from_planar(t_ns, x, y, yaw)


def arc(t_ns: np.ndarray) -> Trajectory:
    """Half a circle of radius 1 m centred at (2, 0), heading along the tangent."""
    t = t_ns / 1e9
    phi = np.pi * t / DURATION_S
    x, y = 2.0 + np.cos(phi), np.sin(phi)
    return Trajectory.from_planar(t_ns, x, y, phi + np.pi / 2)


def rotated(traj: Trajectory, theta: float) -> Trajectory:
    """The whole trajectory rotated by theta about the world origin (positions and headings)."""
    c, s = np.cos(theta), np.sin(theta)
    x = c * traj.positions[:, 0] - s * traj.positions[:, 1]
    y = s * traj.positions[:, 0] + c * traj.positions[:, 1]
    return Trajectory.from_planar(traj.stamps_ns, x, y, traj.yaw + theta)
