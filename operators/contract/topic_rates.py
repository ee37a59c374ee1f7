"""The rate table: every topic's nominal rate and every node's timer, in the
sim and hardware dataflows (``models/alohamini2/rates.yaml``).

One table, like a service list: the dataflows' ``dora/timer/millis/N`` inputs,
the rates in the config files and the rates in docs/messages.md are checked
against it (tests/models/test_rate_table.py), and the scripted operator reads
its report rate from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from teledora.operators.config import ConfigError, config_from_mapping, key_field

DataflowKind = Literal["sim", "hardware"]
DATAFLOW_KINDS: tuple[DataflowKind, ...] = ("sim", "hardware")


@dataclass(frozen=True)
class TimerPeriods:
    """A node's ``tick`` input: ``dora/timer/millis/<ms>``; None where it has no timer."""

    node: str = key_field()
    sim_ms: int | None
    hardware_ms: int | None

    def __post_init__(self) -> None:
        if all(ms is None for ms in (self.sim_ms, self.hardware_ms)):
            raise ConfigError("sim_ms, hardware_ms: at least one period needed")
        if any(ms is not None and ms <= 0 for ms in (self.sim_ms, self.hardware_ms)):
            raise ConfigError("periods must be > 0 ms")

    def period_ms(self, kind: DataflowKind) -> int | None:
        return self.sim_ms if kind == "sim" else self.hardware_ms


@dataclass(frozen=True)
class TopicRate:
    """One topic (``node/output``; ``*/output`` for every node's).

    ``hardware_hz`` is None where the topic is not published in the hardware
    dataflow or a device sets its rate (``paced_by`` says which). ``per_tick``:
    one message per tick of the producer's timer, wherever it has one.
    """

    topic: str = key_field()
    sim_hz: float
    hardware_hz: float | None
    per_tick: bool
    paced_by: str

    def __post_init__(self) -> None:
        if not self.sim_hz > 0 or (self.hardware_hz is not None and not self.hardware_hz > 0):
            raise ConfigError("rates must be > 0 Hz")

    @property
    def node(self) -> str:
        return self.topic.split("/", 1)[0]

    @property
    def output(self) -> str:
        return self.topic.split("/", 1)[1]

    def rate_hz(self, kind: DataflowKind) -> float | None:
        return self.sim_hz if kind == "sim" else self.hardware_hz

    def rate_text(self) -> str:
        """The rate as docs/messages.md shows it: ``50 Hz``, ``50 Hz (robot 100 Hz)``."""
        text = f"{self.sim_hz:g} Hz"
        if self.hardware_hz is not None and self.hardware_hz != self.sim_hz:
            text += f" (robot {self.hardware_hz:g} Hz)"
        return text


@dataclass(frozen=True)
class RateTable:
    """Everything in rates.yaml."""

    timers: dict[str, TimerPeriods]
    topics: dict[str, TopicRate]

    def __post_init__(self) -> None:
        for name, rate in self.topics.items():
            if "/" not in name:
                raise ConfigError(f"topics.{name}: a topic is node/output")
            if rate.per_tick and rate.node not in self.timers:
                raise ConfigError(f"topics.{name}: per_tick, but timers has no {rate.node!r}")

    def topic(self, name: str) -> TopicRate:
        """The entry of ``node/output``, or of ``*/output``.

        Raises:
            ConfigError: neither is listed.
        """
        node, _, output = name.partition("/")
        for key in (name, f"*/{output}"):
            if key in self.topics:
                return self.topics[key]
        raise ConfigError(f"rates.yaml lists no topic {name!r}")

    def timer_ms(self, node: str, kind: DataflowKind) -> int | None:
        """The node's tick period in that kind of dataflow (None: no timer)."""
        timer = self.timers.get(node)
        return None if timer is None else timer.period_ms(kind)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "RateTable":
        """Builds the table from rates.yaml's mapping, checked."""
        return config_from_mapping(cls, data)
