"""Input journals in a run directory: where a node's journal is recorded and
how it is read back for an exact replay (see teledora/runtime/node_journal.py
for the live side)."""

from __future__ import annotations

import os
from pathlib import Path

from teledora.operators.contract.messages import MessageError, decode
from teledora.operators.recording.input_journal import JournalChunk, JournalError, join_chunks
from teledora.recording.run_reader import RunReader

JOURNAL_OUTPUT = "journal"
FOLLOW_ENV = "TELEDORA_FOLLOW_JOURNAL"


def load_journal(run_dir: str | os.PathLike[str], node: str) -> tuple[list, dict[str, int]]:
    """(steps, output counts) of ``node``'s journal recorded in a run.

    Raises:
        JournalError: the run holds no journal of this node, or a broken one.
    """
    reader = RunReader(Path(run_dir))
    topics = [t for t, o in reader.topics_of(node).items() if o == JOURNAL_OUTPUT]
    if not topics:
        raise JournalError(f"run {run_dir} holds no journal of node {node!r}")
    chunks = []
    for msg in reader.iter_topic(topics[0]):
        try:
            chunks.append(JournalChunk.from_message(decode("InputJournal", msg.value)))
        except MessageError as exc:
            raise JournalError(f"{topics[0]}: {exc}") from None
    steps, counts = join_chunks(chunks)
    if not steps:
        raise JournalError(f"the journal of {node!r} in {run_dir} is empty")
    return steps, counts
