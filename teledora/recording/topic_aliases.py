"""Outputs that moved to another node, so that runs recorded before still read
under today's names.

A run names each topic by the node and output that sent it. When an output
moves to another node (the IK's ``joint_commands`` went from its own ``ik``
node into ``teleop``), an older run keeps its old file names;
:meth:`~teledora.recording.run_reader.RunReader.sources` reports such a topic
under its current (node, output), so exports, ``log info`` and replayers find
it where a new run has it. Its bytes are unchanged: only the name it is read
under moves.
"""

from __future__ import annotations

# (old node, output) -> (current node, output)
MOVED_OUTPUTS: dict[tuple[str, str], tuple[str, str]] = {
    ("ik", "joint_commands"): ("teleop", "joint_commands"),
}

# nodes that no longer exist, with where their work went: a run that holds
# their input journal cannot be replayed exactly by today's nodes
RETIRED_NODES: dict[str, str] = {
    "ik": "the IK now runs inside the teleop node",
}


def current_source(node: str, output: str) -> tuple[str, str]:
    """Today's (node, output) for a recorded one."""
    return MOVED_OUTPUTS.get((node, output), (node, output))
