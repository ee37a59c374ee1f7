"""ik.yaml as one checked dataclass: the solver, collision avoidance, joint
reference and global fallback (what :class:`~teledora.operators.ik.ik_solver.BimanualIk` needs),
the workspace limits and node timing (the ik node's loop) and the path planner."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from teledora.operators.config import config_from_mapping
from teledora.operators.ik.cartesian_path import PathConfig
from teledora.operators.ik.global_search import GlobalSearchConfig
from teledora.operators.ik.ik_loop import IkNodeConfig
from teledora.operators.ik.ik_settings import CollisionConfig, IkConfigError, IkSettings, SolverConfig
from teledora.operators.ik.joint_reference import JointReferenceConfig
from teledora.operators.ik.workspace_limits import WorkspaceConfig


@dataclass(frozen=True, eq=False)
class IkConfig:
    """Everything in ik.yaml."""

    solver: SolverConfig
    collision: CollisionConfig
    joint_reference: JointReferenceConfig
    global_search: GlobalSearchConfig
    workspace: WorkspaceConfig
    node: IkNodeConfig
    path: PathConfig

    @property
    def settings(self) -> IkSettings:
        """The solver-side sections, as the IK takes them."""
        return IkSettings(self.solver, self.collision, self.joint_reference, self.global_search)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> "IkConfig":
        """Builds the config from ik.yaml's mapping, checked."""
        return config_from_mapping(cls, data, error=IkConfigError)
