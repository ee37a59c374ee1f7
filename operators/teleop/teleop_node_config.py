"""The teleop and episodes nodes' own tuning: teleop.yaml's ``node`` and
``episodes`` sections (the control scheme's keys are :class:`TeleopConfig`'s)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from teledora.operators.errors import ConfigError


class TeleopNodeConfigError(ConfigError):
    """A teleop or episodes node setting is missing, unknown or out of range."""


def _finite_at_least(section: str, name: str, value: object, low: float, strict: bool) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < low or (strict and value == low):
        raise TeleopNodeConfigError(f"{section}.{name} must be a finite number {'>' if strict else '>='} {low:g}, got {value!r}")


@dataclass(frozen=True)
class TeleopNodeConfig:
    """How the teleop node turns batches of XR reports into published steps.

    Attributes:
        republish_s: On a tick, publish when nothing went out for this long
            (the scheme's timeouts act at this granularity).
        burst_spacing_s: A report followed in its batch by one stamped less
            than this later gets no step of its own.
        max_steps_per_batch: Steps published for one batch at most (its
            newest reports): a backlog collapses.
        keepalive_s: base_cmd, lift_cmd and state go out when they change,
            and unchanged once this long (0: every step).
    """

    republish_s: float
    burst_spacing_s: float
    max_steps_per_batch: int
    keepalive_s: float

    def __post_init__(self) -> None:
        _finite_at_least("node", "republish_s", self.republish_s, 0.0, strict=True)
        _finite_at_least("node", "burst_spacing_s", self.burst_spacing_s, 0.0, strict=False)
        _finite_at_least("node", "keepalive_s", self.keepalive_s, 0.0, strict=False)
        if isinstance(self.max_steps_per_batch, bool) or not isinstance(self.max_steps_per_batch, int) \
                or self.max_steps_per_batch < 1:
            raise TeleopNodeConfigError(f"node.max_steps_per_batch must be a whole number >= 1, got {self.max_steps_per_batch!r}")


@dataclass(frozen=True)
class EpisodesNodeConfig:
    """The episodes node's settings.

    Attributes:
        discard_confirm_s: The page's DISCARD arms; its CONFIRM must follow
            within this long.
    """

    discard_confirm_s: float

    def __post_init__(self) -> None:
        _finite_at_least("episodes", "discard_confirm_s", self.discard_confirm_s, 0.0, strict=True)

