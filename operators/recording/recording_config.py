"""recording.yaml: how the recorder paces its writes and its CPU share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.config import config_from_mapping
from teledora.operators.errors import ConfigError

#: Period of the recorder's heartbeat (RecorderStatus) that the actuators watch.
STATUS_PERIOD_S = 0.2


@dataclass(frozen=True)
class RecorderConfig:
    """The recorder node's tuning.

    Attributes:
        flush_interval_s: Longest time a received message waits in memory
            before it is written to its topic file.
        batch_pause_s: Wait after a batch shorter than a full turn, so that
            the next batch is larger (fewer wake-ups); at most half the
            heartbeat period, which it would otherwise hold back.
        priority_boost_nice: Nice steps the recorder raises its CPU priority
            by at start (0 leaves it).
    """

    flush_interval_s: float
    batch_pause_s: float
    priority_boost_nice: int

    def __post_init__(self) -> None:
        if not self.flush_interval_s > 0:
            raise ConfigError(f"recorder.flush_interval_s must be > 0, got {self.flush_interval_s}")
        if not 0.0 <= self.batch_pause_s <= STATUS_PERIOD_S / 2:
            raise ConfigError(f"recorder.batch_pause_s must be within 0..{STATUS_PERIOD_S / 2:g} s "
                              f"(half the heartbeat period), got {self.batch_pause_s:g}")
        if not 0 <= self.priority_boost_nice <= 39:
            raise ConfigError(f"recorder.priority_boost_nice must be within 0..39, got {self.priority_boost_nice}")


@dataclass(frozen=True)
class RecordingConfig:
    """recording.yaml."""

    recorder: RecorderConfig

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "RecordingConfig":
        return config_from_mapping(cls, data)
