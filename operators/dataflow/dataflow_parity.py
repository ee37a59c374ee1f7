"""Interface parity between two dora dataflow descriptors (e.g. sim.yml and hardware.yml).

The sim and hardware graphs must look the same to every node that is not a
device: the same node ids, each with the same output names carrying the same
message types. This module compares two *parsed* dataflow YAMLs (plain dicts,
as ``yaml.safe_load`` returns them) and lists every difference in words; it
reads no files.

Nodes that exist only in the reference graph for a documented reason are
passed in ``reference_only`` (id -> reason): :data:`SIM_ONLY_NODES` is the
project's list for sim.yml. Inputs are not compared (a hardware driver reads a
timer where its sim twin reads the simulator), but :func:`dangling_inputs`
checks that every input of one graph names an output that exists in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from teledora.operators.errors import ConfigError

#: Nodes of sim.yml that have no hardware counterpart, and why.
SIM_ONLY_NODES: dict[str, str] = {
    "sim": "MuJoCo physics of the arms, grippers and lift stands in for the real machine; "
    "on the robot the devices themselves are the physics",
}

#: Dora's built-in input sources (not nodes of the graph).
_DORA_SOURCE_PREFIX = "dora/"


class DataflowFormatError(ConfigError):
    """A descriptor that is not a dataflow: no ``nodes`` list, a node without ``id``, a duplicate id."""


@dataclass(frozen=True)
class NodeInterface:
    """What the rest of a graph sees of one node.

    Attributes:
        node_id: The node's ``id``.
        outputs: Output names, in declaration order.
        output_types: Output name -> type annotation (``teledora/msgs/v1/Kind``) where declared.
        inputs: Input name -> source (``node/output`` or ``dora/timer/...``).
        machine: ``deploy.machine``, or None when the node is not placed.
    """

    node_id: str
    outputs: tuple[str, ...]
    output_types: Mapping[str, str]
    inputs: Mapping[str, str]
    machine: str | None = None


@dataclass
class ParityReport:
    """Differences between a reference graph and a variant of it.

    Attributes:
        missing: Nodes of the reference that the variant lacks (undocumented).
        extra: Nodes of the variant the reference lacks (undocumented).
        output_mismatches: Node id -> (outputs only in reference, outputs only in variant).
        type_mismatches: ``node/output`` -> (reference type, variant type).
        excused: Reference-only nodes that were documented, with their reason.
    """

    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    output_mismatches: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    type_mismatches: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    excused: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not (self.missing or self.extra or self.output_mismatches or self.type_mismatches)

    def problems(self) -> list[str]:
        """One plain sentence per difference (empty when the interfaces match)."""
        out = [f"node {n!r} is in the reference graph but not in the variant" for n in self.missing]
        out += [f"node {n!r} is in the variant but not in the reference graph" for n in self.extra]
        for node, (ref_only, var_only) in self.output_mismatches.items():
            if ref_only:
                out.append(f"node {node!r}: outputs {ref_only} exist only in the reference graph")
            if var_only:
                out.append(f"node {node!r}: outputs {var_only} exist only in the variant")
        for topic, (ref_t, var_t) in self.type_mismatches.items():
            out.append(f"output {topic!r}: type {ref_t!r} in the reference graph, {var_t!r} in the variant")
        return out


def _as_list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, list):
        return value
    raise DataflowFormatError(f"{what} must be a list, got {type(value).__name__}")


def _source_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return str(value.get("source", ""))
    return str(value)


def node_interfaces(dataflow: Mapping[str, Any]) -> dict[str, NodeInterface]:
    """The interface of every node of a parsed dataflow, by id.

    Raises:
        DataflowFormatError: ``nodes`` missing or not a list, a node without ``id``,
            a duplicate id.
    """
    if not isinstance(dataflow, Mapping) or "nodes" not in dataflow:
        raise DataflowFormatError("a dataflow descriptor needs a top-level 'nodes' list")
    found: dict[str, NodeInterface] = {}
    for i, entry in enumerate(_as_list(dataflow["nodes"], "'nodes'")):
        if not isinstance(entry, Mapping) or not entry.get("id"):
            raise DataflowFormatError(f"node #{i} has no 'id'")
        node_id = str(entry["id"])
        if node_id in found:
            raise DataflowFormatError(f"node id {node_id!r} appears twice")
        outputs = tuple(str(o) for o in _as_list(entry.get("outputs"), f"{node_id}.outputs"))
        types = {str(k): str(v) for k, v in (entry.get("output_types") or {}).items()}
        inputs = {str(k): _source_of(v) for k, v in (entry.get("inputs") or {}).items()}
        deploy = entry.get("deploy") or entry.get("_unstable_deploy") or {}
        machine = deploy.get("machine") if isinstance(deploy, Mapping) else None
        found[node_id] = NodeInterface(node_id, outputs, types, inputs, str(machine) if machine else None)
    return found


def compare_interfaces(
    reference: Mapping[str, Any],
    variant: Mapping[str, Any],
    reference_only: Mapping[str, str] | None = None,
    variant_only: Mapping[str, str] | None = None,
) -> ParityReport:
    """Compares node ids, output names and output types of two parsed dataflows.

    Args:
        reference: The reference descriptor (e.g. sim.yml).
        variant: The descriptor that must expose the same interface (e.g. hardware.yml).
        reference_only: Documented ids allowed only in the reference (id -> reason).
        variant_only: Documented ids allowed only in the variant (id -> reason).
    """
    reference_only = dict(reference_only or {})
    variant_only = dict(variant_only or {})
    ref, var = node_interfaces(reference), node_interfaces(variant)
    report = ParityReport()
    for node_id in ref:
        if node_id not in var:
            if node_id in reference_only:
                report.excused[node_id] = reference_only[node_id]
            else:
                report.missing.append(node_id)
    report.extra = [n for n in var if n not in ref and n not in variant_only]
    for node_id in ref.keys() & var.keys():
        r, v = ref[node_id], var[node_id]
        ref_only = [o for o in r.outputs if o not in v.outputs]
        var_only = [o for o in v.outputs if o not in r.outputs]
        if ref_only or var_only:
            report.output_mismatches[node_id] = (ref_only, var_only)
        for output in r.outputs:
            if output in v.outputs and r.output_types.get(output) != v.output_types.get(output):
                report.type_mismatches[f"{node_id}/{output}"] = (r.output_types.get(output), v.output_types.get(output))
    report.missing.sort()
    report.extra.sort()
    return report


def dangling_inputs(dataflow: Mapping[str, Any]) -> list[str]:
    """Inputs whose source names a node or output that the graph does not have,
    as ``node.input <- source`` lines (dora's own ``dora/...`` sources are fine)."""
    nodes = node_interfaces(dataflow)
    out = []
    for node in nodes.values():
        for name, source in node.inputs.items():
            if source.startswith(_DORA_SOURCE_PREFIX):
                continue
            producer, _, output = source.partition("/")
            if producer not in nodes or output not in nodes[producer].outputs:
                out.append(f"{node.node_id}.{name} <- {source}")
    return sorted(out)


def undeployed_nodes(dataflow: Mapping[str, Any]) -> list[str]:
    """Ids of nodes without a ``deploy.machine`` (in a multi-machine graph, all must have one)."""
    return sorted(n.node_id for n in node_interfaces(dataflow).values() if n.machine is None)


def machine_of(dataflow: Mapping[str, Any]) -> dict[str, str | None]:
    """Node id -> machine it is deployed on (None when not placed)."""
    return {n.node_id: n.machine for n in node_interfaces(dataflow).values()}
