"""Which nodes run under real-time scheduling, at which priority, and the
budget that keeps a real-time node from starving the machine.

``scheduling.yaml`` names the nodes of the control path (headset to
actuator) and gives each a Linux policy (``fifo``, ``rr``) and priority
(1-99, higher first), the practice of ros2_control's controller manager;
every other node stays under the normal time-sharing policy. Pure: the node
runtime (``teledora.runtime.realtime``) applies it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from teledora.operators.config import config_from_mapping
from teledora.operators.errors import ConfigError

RT_PRIORITY_MIN, RT_PRIORITY_MAX = 1, 99


class SchedulingConfigError(ConfigError):
    """scheduling.yaml holds a missing, unknown or out-of-range value."""


@dataclass(frozen=True)
class NodeScheduling:
    """One node's real-time policy and priority."""

    policy: Literal["fifo", "rr"]
    priority: int

    def __post_init__(self) -> None:
        if not RT_PRIORITY_MIN <= self.priority <= RT_PRIORITY_MAX:
            raise SchedulingConfigError(f"priority must be within {RT_PRIORITY_MIN}..{RT_PRIORITY_MAX}, got {self.priority}")


@dataclass(frozen=True)
class SchedulingConfig:
    """scheduling.yaml.

    Attributes:
        enabled: Apply the table (false: every node time-shares, as dora starts it).
        cpu_budget_ms: CPU time a real-time node may use without blocking once
            (waiting for its next input); past it the node drops to the normal
            policy and says so (Linux ``RLIMIT_RTTIME``).
        daemon: Real-time policy of the dora process that routes the messages
            (``dora run``, or ``dora daemon`` on each machine): the control
            path waits for it, so it runs above the nodes it serves. None:
            it time-shares (no CPU budget guards it).
        nodes: Real-time policy per node id.
    """

    enabled: bool
    cpu_budget_ms: float
    daemon: NodeScheduling | None
    nodes: dict[str, NodeScheduling]

    def __post_init__(self) -> None:
        if not 1.0 <= self.cpu_budget_ms <= 10_000.0:
            raise SchedulingConfigError(f"cpu_budget_ms must be within 1..10000, got {self.cpu_budget_ms}")

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "SchedulingConfig":
        return config_from_mapping(cls, data, error=SchedulingConfigError)

    def for_node(self, node_id: str) -> NodeScheduling | None:
        """The real-time scheduling of ``node_id``; None: it time-shares."""
        return self.nodes.get(node_id) if self.enabled else None

    def for_daemon(self) -> NodeScheduling | None:
        """The real-time scheduling of dora's routing process; None: it time-shares."""
        return self.daemon if self.enabled else None
