"""Derives a multi-machine dataflow from a single-machine one.

`sim.yml` starts nodes from files (`path: ../nodes/<subsystem>/x.py`); a
dataflow spread over daemons on several machines starts them as installed modules
(`path: python`, `args: -m teledora.nodes.<subsystem>.x ...`) and places each with
`deploy: {machine: ...}`. Everything else (inputs, env, outputs, types) is
carried over unchanged, so the distributed graph cannot drift from the original.
"""

from __future__ import annotations

import copy
from pathlib import PurePosixPath
from typing import Any, Mapping

from teledora.operators.errors import ConfigError

NODE_PACKAGE = "teledora.nodes"


class DeployError(ConfigError):
    """A node cannot be placed (no machine for it, or not a teledora node file)."""


def distribute(dataflow: Mapping[str, Any], placement: Mapping[str, str]) -> dict[str, Any]:
    """A copy of ``dataflow`` with every node started as a module and deployed.

    Args:
        dataflow: The parsed single-machine dataflow.
        placement: Machine id per node id; every node must have one.
    """
    out = copy.deepcopy(dict(dataflow))
    nodes = []
    for node in out.get("nodes", []):
        node_id = node["id"]
        if node_id not in placement:
            raise DeployError(f"no machine given for node {node_id!r}")
        path = PurePosixPath(str(node.get("path", "")))
        if path.suffix != ".py" or path.parent.parent.name != "nodes":
            raise DeployError(
                f"node {node_id!r}: expected a path to nodes/<subsystem>/<name>.py, got {node.get('path')!r}"
            )
        module = f"{NODE_PACKAGE}.{path.parent.name}.{path.stem}"
        args = " ".join(filter(None, [f"-m {module}", str(node.get("args", "")).strip()]))
        rebuilt = {"id": node_id, "path": "python", "args": args, "deploy": {"machine": placement[node_id]}}
        rebuilt.update({k: v for k, v in node.items() if k not in ("id", "path", "args", "deploy")})
        nodes.append(rebuilt)
    out["nodes"] = nodes
    return out
