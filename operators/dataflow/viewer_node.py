"""A dataflow with the optional ``viewer`` node added (``--view``).

The shipped dataflows never contain the viewer; `teledora demo --view` and
`teledora run DATAFLOW --view` write this augmented copy elsewhere and start
that. The viewer subscribes to every output whose type it shows, each input
named ``<node>__<output>``, with dora's default drop policy and a short queue
(:data:`QUEUE_SIZE`): the sender never waits, and the node itself shows only
the newest message of each input in every batch it reads.

Why not ``queue_size: 1``: dora 1.1.0 sizes a node's ingress channel from the
sum of its inputs' queue sizes and, when that channel is full, drops the
*incoming* message. With one slot per input, a burst that arrives while the
viewer is busy leaves it holding the burst's first message and losing the
newest. A few slots per input keep the channel from filling while the node
reads; the node then drops the older ones itself. dora also logs a warning per
dropped message, so the viewer node only forwards errors (``min_log_level``).

Nodes that are started from files get absolute paths, since the copy lives in
another folder.
"""

from __future__ import annotations

import copy
import posixpath
from typing import Any, Mapping

from teledora.operators.dataflow.dataflow_parity import node_interfaces
from teledora.operators.errors import ConfigError
from teledora.operators.viewing.view_mapping import IMAGE_KIND, SHOWN_KINDS

VIEWER_ID = "viewer"
VIEWER_MODULE = "teledora.nodes.viewing.viewer"
#: nodes the viewer never listens to
NOT_VIEWED = ("recorder", VIEWER_ID)
#: the machine the viewer runs on in a dataflow spread over machines
VIEWER_MACHINE = "workstation"
#: dora queue per viewer input (see above)
QUEUE_SIZE = 10
_IMAGE_TYPE = "std/media/v1/Image"
_DIAGNOSTICS_TYPE = "teledora/msgs/v1/Diagnostics"


def viewed_kind(type_urn: str) -> str | None:
    """The view's kind for a dataflow output type, or None when the view does not show it."""
    if type_urn == _IMAGE_TYPE:
        return IMAGE_KIND
    kind = type_urn.rsplit("/", 1)[-1]
    return kind if type_urn.startswith("teledora/msgs/") and kind in SHOWN_KINDS else None


def _absolute(path: str, base_dir: str) -> str:
    if path == "python" or posixpath.isabs(path) or not (path.endswith(".py") or "/" in path):
        return path
    return posixpath.normpath(posixpath.join(base_dir, path))


def with_viewer(dataflow: Mapping[str, Any], base_dir: str, viewer_path: str | None) -> dict[str, Any]:
    """A copy of ``dataflow`` (parsed YAML) with the viewer node added.

    Args:
        dataflow: The parsed dataflow.
        base_dir: Absolute folder of the original file (relative node paths
            are made absolute against it).
        viewer_path: The viewer's file (``nodes/viewing/viewer.py``) for a
            dataflow that starts nodes from files; None starts it as the
            installed module (``python -m``), as dataflows spread over
            machines do. A dataflow that places nodes (``deploy``) puts the
            viewer on the workstation.

    Raises:
        ConfigError: the dataflow already has a ``viewer`` node.
    """
    nodes = node_interfaces(dataflow)
    if VIEWER_ID in nodes:
        raise ConfigError(f"the dataflow already has a node {VIEWER_ID!r}")
    out = copy.deepcopy(dict(dataflow))
    for entry in out["nodes"]:
        if isinstance(entry.get("path"), str):
            entry["path"] = _absolute(entry["path"], base_dir)
    inputs: dict[str, Any] = {}
    input_types: dict[str, str] = {}
    for node_id, iface in nodes.items():
        if node_id in NOT_VIEWED:
            continue
        for output in iface.outputs:
            type_urn = iface.output_types.get(output, "")
            if viewed_kind(type_urn) is None:
                continue
            name = f"{node_id}__{output}"
            inputs[name] = {"source": f"{node_id}/{output}", "queue_size": QUEUE_SIZE}
            input_types[name] = type_urn
    viewer: dict[str, Any] = {"id": VIEWER_ID}
    if viewer_path is None:
        viewer.update(path="python", args=f"-m {VIEWER_MODULE}")
    else:
        viewer["path"] = viewer_path
    if any(n.machine for n in nodes.values()):
        viewer["deploy"] = {"machine": VIEWER_MACHINE}
    viewer["min_log_level"] = "error"  # dora warns once per dropped message
    viewer.update(inputs=inputs, input_types=input_types, outputs=["diagnostics"],
                  output_types={"diagnostics": _DIAGNOSTICS_TYPE})
    out["nodes"].append(viewer)
    return out
