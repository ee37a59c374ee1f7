"""Every node's event loop is in its node file: nothing under teledora/devices
reads a node's events (``next_batch``, ``poll()``, ``newest``, a dora node's
``next()``) or imports dora or the event stream."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEVICES = REPO / "teledora" / "devices"

EVENT_CALLS = {"next_batch", "newest"}
EVENT_MODULES = ("dora", "teledora.runtime.event_stream")


def event_reads(source: str) -> list[str]:
    """What in ``source`` reads a node's events, as ``line: what``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            no_args = not node.args and all(k.arg == "timeout" for k in node.keywords)
            if name in EVENT_CALLS or (name in ("poll", "next") and no_args):
                found.append((node.lineno, f".{name}()"))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, f"import {a.name}") for a in node.names if a.name.startswith(EVENT_MODULES)]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(EVENT_MODULES):
            found.append((node.lineno, f"from {node.module} import"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_no_device_module_runs_an_event_loop():
    offenders = {str(p.relative_to(REPO)): hits for p in sorted(DEVICES.rglob("*.py"))
                 if (hits := event_reads(p.read_text()))}
    assert offenders == {}, "event loops belong in the node files (nodes/): " + repr(offenders)


def test_the_check_finds_a_loop_written_the_usual_ways():
    loop = ("from teledora.runtime.event_stream import EventStream\n"
            "def run(io, node):\n"
            "    while (batch := io.next_batch()) is not None:\n"
            "        for event in io.newest(batch, {'tick'}):\n"
            "            pass\n"
            "    io.poll()\n"
            "    node.next(timeout=0.1)\n"
            "    import dora\n")
    assert [hit.split(": ")[1] for hit in event_reads(loop)] == [
        "from teledora.runtime.event_stream import", ".next_batch()", ".newest()", ".poll()", ".next()", "import dora"]
    assert event_reads("def f(session, now):\n    return session.poll(now)\n") == []
