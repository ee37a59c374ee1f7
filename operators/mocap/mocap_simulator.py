"""Simulated motion capture: ground truth sampled like a Motive rig would.

Frames are exposed on a fixed grid (``rate_hz``, 120 Hz by default) from the
first ground-truth stamp on; each frame's pose is the ground truth
interpolated at its exposure instant plus Gaussian noise (sub-millimetre
position, a fraction of a degree in heading). A frame becomes available
``latency_s`` after its exposure and is stamped with the exposure time, like
the hardware node stamps mid-exposure. Two kinds of loss are modelled:
tracking dropouts (bursts of frames published with ``tracking_valid = False``)
and lost packets (frames never published; their frame numbers are skipped).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from teledora.operators.errors import TeledoraError
from teledora.operators.geometry import lerp_planar
from teledora.operators.config import config_from_mapping

MAX_FRAMES_PER_TRUTH = 240  # a longer truth gap is skipped, not filled with interpolated frames


class MocapSimError(TeledoraError, ValueError):
    """Invalid simulator settings or ground truth."""


@dataclass(frozen=True)
class MocapSimConfig:
    """Simulated rig settings (``sim`` section of mocap.yaml)."""

    rate_hz: float
    latency_s: float
    position_noise_m: float
    yaw_noise_rad: float
    mean_error_m: float
    dropout_start_probability: float
    dropout_mean_frames: float
    packet_loss_probability: float
    rigid_body_id: int
    seed: int

    def __post_init__(self) -> None:
        if not self.rate_hz > 0:
            raise MocapSimError(f"rate_hz must be positive, got {self.rate_hz}")
        if self.latency_s < 0 or self.position_noise_m < 0 or self.yaw_noise_rad < 0:
            raise MocapSimError("latency and noise levels must be >= 0")
        for name in ("dropout_start_probability", "packet_loss_probability"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise MocapSimError(f"{name} must be within [0, 1]")
        if self.dropout_mean_frames < 1:
            raise MocapSimError("dropout_mean_frames must be >= 1")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "MocapSimConfig":
        """Builds the config from the ``sim`` section of mocap.yaml, checked."""
        return config_from_mapping(cls, data, "sim", MocapSimError)


class MocapSimulator:
    """Turns ground-truth base poses into MocapPose message dicts.

    Args:
        config: Rig settings.
        name: Rigid-body name written into each pose.
        frame_id: World frame name.
    """

    def __init__(self, config: MocapSimConfig, name: str, frame_id: str) -> None:
        self.config = config
        self.name = name
        self.frame_id = frame_id
        self.period_ns = int(round(1e9 / self.config.rate_hz))
        self.latency_ns = int(round(self.config.latency_s * 1e9))
        self._rng = np.random.default_rng(self.config.seed)
        self._prev: tuple[int, float, float, float] | None = None
        self._origin_ns: int | None = None
        self._next_index = 0
        self._dropout_left = 0
        self._pending: deque[tuple[int, dict[str, Any]]] = deque()
        self.frames = 0
        self.lost_packets = 0
        self.invalid_frames = 0
        self.skipped_frames = 0
        self.stale_truth = 0

    def add_truth(self, stamp_ns: int, x: float, y: float, yaw: float) -> None:
        """Adds one ground-truth sample; frames exposed up to ``stamp_ns`` are produced.

        Raises:
            MocapSimError: non-finite pose.
        """
        if not all(math.isfinite(v) for v in (x, y, yaw)):
            raise MocapSimError("ground truth pose must be finite")
        sample = (int(stamp_ns), float(x), float(y), float(yaw))
        if self._prev is None:
            self._origin_ns = sample[0]
            self._emit(sample[0], sample[1:])
            self._next_index = 1
            self._prev = sample
            return
        if sample[0] <= self._prev[0]:
            self.stale_truth += 1
            return
        assert self._origin_ns is not None
        t0, x0, y0, yaw0 = self._prev
        t1 = sample[0]
        last_index = (t1 - self._origin_ns) // self.period_ns
        if last_index - self._next_index + 1 > MAX_FRAMES_PER_TRUTH:
            skip = last_index - self._next_index + 1 - MAX_FRAMES_PER_TRUTH
            self.skipped_frames += skip
            self._next_index += skip
        while self._next_index <= last_index:
            t = self._origin_ns + self._next_index * self.period_ns
            self._emit(t, lerp_planar((x0, y0, yaw0), sample[1:], (t - t0) / (t1 - t0)))
            self._next_index += 1
        self._prev = sample

    def _emit(self, exposure_ns: int, pose: tuple[float, float, float]) -> None:
        c = self.config
        frame_number = self._next_index + 1
        self.frames += 1
        if self._dropout_left == 0 and self._rng.random() < c.dropout_start_probability:
            self._dropout_left = int(self._rng.geometric(1.0 / c.dropout_mean_frames))
        if self._rng.random() < c.packet_loss_probability:
            self.lost_packets += 1
            if self._dropout_left:
                self._dropout_left -= 1
            return
        msg: dict[str, Any] = {
            "stamp_ns": int(exposure_ns),
            "frame_id": self.frame_id,
            "rigid_body_id": int(c.rigid_body_id),
            "name": self.name,
            "tracking_valid": False,
            "position": [math.nan] * 3,
            "orientation": [math.nan] * 4,
            "mean_error_m": 0.0,
            "frame_number": int(frame_number),
        }
        if self._dropout_left:
            self._dropout_left -= 1
            self.invalid_frames += 1
        else:
            sigma = np.array([c.position_noise_m, c.position_noise_m, c.position_noise_m, c.yaw_noise_rad])
            noise = self._rng.normal(0.0, 1.0, 4) * sigma
            yaw = pose[2] + noise[3]
            msg.update(
                tracking_valid=True,
                position=[pose[0] + noise[0], pose[1] + noise[1], noise[2]],
                orientation=[0.0, 0.0, math.sin(yaw / 2), math.cos(yaw / 2)],
                mean_error_m=c.mean_error_m,
            )
        self._pending.append((exposure_ns + self.latency_ns, msg))

    def due(self, now_ns: int) -> list[dict[str, Any]]:
        """Frames whose latency has elapsed at host time ``now_ns``, oldest first."""
        out = []
        while self._pending and self._pending[0][0] <= now_ns:
            out.append(self._pending.popleft()[1])
        return out

    @property
    def pending(self) -> int:
        return len(self._pending)

    @property
    def next_due_ns(self) -> int | None:
        """Host time at which the oldest held frame falls due, or None when none is held."""
        return self._pending[0][0] if self._pending else None
