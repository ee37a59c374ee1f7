"""How a recorded run becomes a replay dataflow.

``build_replay_dataflow`` rewrites the recorded dataflow: replaced nodes become
replayers under the same ids and outputs, inputs they feed (and every data
input of a journal follower) become lossless with room for the whole
recording, followers get ``TELEDORA_FOLLOW_JOURNAL`` and lose their timers, and
the recorder is told what it records a replay of. ``expected_counts`` and
``follower_counts`` say how many messages the replay's recorder must hold
before the replay is complete. The ``teledora replay`` command
(teledora/commands/replay.py) runs the result.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Iterable

from teledora.operators.errors import TeledoraError
from teledora.recording.journal_files import FOLLOW_ENV, load_journal
from teledora.recording import RunReader

TIMER_PREFIX = "dora/timer/"


class ReplayPlanError(TeledoraError, ValueError):
    """A replay that cannot be built from this run (unknown node, nothing recorded...)."""


def _input_source(spec: Any) -> str | None:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, dict):
        return spec.get("source")
    return None


def source_nodes(dataflow: dict[str, Any]) -> list[str]:
    """Nodes whose inputs are only dora timers (or none): what replays by default."""
    out = []
    for entry in dataflow.get("nodes", []):
        sources = [_input_source(s) or "" for s in (entry.get("inputs") or {}).values()]
        if all(s.startswith(TIMER_PREFIX) for s in sources):
            out.append(entry["id"])
    return out


def _absolute_path(path: str, dataflow_dir: Path) -> str:
    if os.path.isabs(path):
        return path
    candidate = dataflow_dir / path
    return str(candidate.resolve()) if candidate.exists() else path


def build_replay_dataflow(
    dataflow: dict[str, Any],
    recorded_outputs: dict[str, set[str]],
    replace: Iterable[str],
    *,
    run_dir: Path,
    dataflow_dir: Path,
    replayer_path: Path,
    speed: float,
    loop: bool,
    queue_size: int = 1000,
    stamps: str = "shifted",
    follow: Iterable[str] = (),
    topic_counts: dict[str, int] | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """The replay dataflow, plus warnings for the user.

    Args:
        dataflow: The recorded dataflow (parsed YAML).
        recorded_outputs: node id -> outputs that have a topic in the run.
        replace: Node ids to replay.
        run_dir: The run being replayed (absolute).
        dataflow_dir: Directory the recorded dataflow's relative paths start from.
        replayer_path: The replayer node's script.
        queue_size: Least ``queue_size`` for inputs fed by a replayer. dora 1.1.0
            drops the oldest message once a backpressure queue holds
            max(queue_size, 100), so a fast replay needs room.
        follow: Live nodes that follow their recorded journal (``--exact``):
            all their data inputs become lossless too.
        topic_counts: "node/output" -> messages recorded; an input fed by a
            replayer or feeding a follower gets at least that much queue.
    """
    replace = list(dict.fromkeys(replace))
    follow = set(follow)
    topic_counts = topic_counts or {}
    by_id = {entry.get("id"): entry for entry in dataflow.get("nodes", [])}
    warnings: list[str] = []
    for node in replace:
        if node not in by_id:
            raise ReplayPlanError(f"node {node!r} is not in the recorded dataflow (nodes: {', '.join(sorted(by_id))})")
        if not recorded_outputs.get(node):
            raise ReplayPlanError(f"the run holds no recorded output of node {node!r}: nothing to replay")
    out = copy.deepcopy(dataflow)
    nodes = []
    for entry in out.get("nodes", []):
        nid = entry.get("id")
        if "path" in entry and isinstance(entry["path"], str):
            entry["path"] = _absolute_path(entry["path"], dataflow_dir)
        if nid in replace:
            outputs = list(entry.get("outputs") or [])
            for missing in sorted(set(outputs) - recorded_outputs[nid]):
                warnings.append(f"{nid}/{missing} was not recorded: it stays silent in the replay")
            args = ["--run", str(run_dir), "--node", nid, "--speed", f"{speed:g}", "--stamps", stamps]
            args += ["--loop"] if loop else []
            replacement: dict[str, Any] = {"id": nid, "path": str(replayer_path), "args": " ".join(args), "outputs": outputs}
            if entry.get("output_types"):
                replacement["output_types"] = entry["output_types"]
            nodes.append(replacement)
            continue
        inputs = entry.get("inputs") or {}
        for name, spec in list(inputs.items()):
            source = _input_source(spec)
            if source and source.startswith(TIMER_PREFIX) and nid in follow:
                del inputs[name]  # a follower takes its ticks from the journal
                continue
            if not source or source.startswith(TIMER_PREFIX):
                continue
            if source.split("/")[0] in replace or nid in follow:
                new_spec = dict(spec) if isinstance(spec, dict) else {"source": source}
                new_spec["queue_policy"] = "backpressure"
                least = max(queue_size, topic_counts.get(source, 0) + 1)
                new_spec["queue_size"] = max(int(new_spec.get("queue_size") or 0), least)
                inputs[name] = new_spec
        if nid in follow:
            env = dict(entry.get("env") or {})
            env[FOLLOW_ENV] = str(run_dir)
            entry["env"] = env
        if str(entry.get("path", "")).endswith("recorder.py"):
            env = dict(entry.get("env") or {})
            env["TELEDORA_REPLAY_OF"] = str(run_dir)
            entry["env"] = env
        nodes.append(entry)
    out["nodes"] = nodes
    return out, warnings


def expected_counts(plan: dict[str, Any], reader: RunReader, replace: Iterable[str]) -> dict[str, int]:
    """Replayed topics the replay's recorder records, with the counts it must reach."""
    replace = set(replace)
    recorded_inputs: set[str] = set()
    for entry in plan.get("nodes", []):
        if str(entry.get("path", "")).endswith("recorder.py"):
            recorded_inputs |= set((entry.get("inputs") or {}).keys())
    out = {}
    for topic, (node, output) in reader.sources().items():
        # a replayer publishes diagnostics of its own in place of the recorded ones
        if node in replace and topic in recorded_inputs and output != "diagnostics":
            out[topic] = reader.read_topic(topic).table.num_rows
    return out


def follower_counts(plan: dict[str, Any], run_dir: Path, follow: Iterable[str]) -> dict[str, int]:
    """Topics of the followers' outputs that the replay's recorder records,
    with the counts their journals account for."""
    recorded_inputs: dict[str, str] = {}
    for entry in plan.get("nodes", []):
        if str(entry.get("path", "")).endswith("recorder.py"):
            for topic, spec in (entry.get("inputs") or {}).items():
                recorded_inputs[_input_source(spec) or ""] = topic
    out = {}
    for node in follow:
        _, counts = load_journal(run_dir, node)
        for output, n in counts.items():
            topic = recorded_inputs.get(f"{node}/{output}")
            if topic and output != "diagnostics":
                out[topic] = n
    return out
