"""Rust library backtraces default to off in every node and every `dora run` teledora starts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from teledora.commands.demo import dora_environment
from teledora.runtime import node_io
from teledora.runtime.library_backtraces import LIBRARY_BACKTRACE_ENV, without_library_backtraces

BIN = Path(sys.executable).parent


def test_off_by_default_and_an_explicit_choice_is_kept() -> None:
    assert without_library_backtraces({"RUST_BACKTRACE": "1"}) == {"RUST_BACKTRACE": "1", LIBRARY_BACKTRACE_ENV: "0"}
    assert without_library_backtraces({LIBRARY_BACKTRACE_ENV: "1"}) == {LIBRARY_BACKTRACE_ENV: "1"}


def test_a_node_turns_them_off_before_dora_is_loaded(monkeypatch) -> None:
    # the Rust side reads the variable when it first builds an error: it must be
    # in the process environment before the node library starts
    seen = []
    fake = types.ModuleType("dora")
    fake.Node = lambda: seen.append(os.environ.get(LIBRARY_BACKTRACE_ENV)) or "node"
    monkeypatch.setitem(sys.modules, "dora", fake)
    monkeypatch.setenv("RUST_BACKTRACE", "1")
    monkeypatch.delenv(LIBRARY_BACKTRACE_ENV, raising=False)
    assert node_io.make_node() == "node"
    assert seen == ["0"]
    monkeypatch.setenv(LIBRARY_BACKTRACE_ENV, "full")
    node_io.make_node()
    assert seen == ["0", "full"]


def test_a_dora_run_started_by_teledora_has_them_off(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("RUST_BACKTRACE", "1")
    monkeypatch.delenv(LIBRARY_BACKTRACE_ENV, raising=False)
    env = dora_environment(tmp_path)
    assert env[LIBRARY_BACKTRACE_ENV] == "0" and env["RUST_BACKTRACE"] == "1"
    monkeypatch.setenv(LIBRARY_BACKTRACE_ENV, "1")
    assert dora_environment(tmp_path)[LIBRARY_BACKTRACE_ENV] == "1"


NODE = """
import json, sys
if sys.argv[1] == "teledora":
    from teledora.runtime.node_io import make_node
    node = make_node()
else:
    from dora import Node
    node = Node()
while True:
    event = node.next(0.001)
    if event is None or event["type"] == "STOP":
        break
    if event["type"] == "ERROR":  # dora's report of the timeout
        print("TIMEOUT", json.dumps({"node": sys.argv[1], "error": str(event.get("error"))}), flush=True)
        break
"""


@pytest.mark.dataflow
def test_under_dora_a_teledora_nodes_timeouts_carry_no_backtrace(tmp_path) -> None:
    # the plain node shows what RUST_BACKTRACE=1 does to a node that does not turn them off
    (tmp_path / "node.py").write_text(NODE)
    flow = {"nodes": [{"id": name, "path": "node.py", "args": name, "inputs": {"tick": "dora/timer/millis/500"}}
                      for name in ("teledora", "plain")]}
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", RUST_BACKTRACE="1")
    env.pop(LIBRARY_BACKTRACE_ENV, None)
    out = subprocess.run([str(BIN / "dora"), "run", "flow.yml", "--stop-after", "20s"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    errors = {r["node"]: r["error"] for r in (json.loads(ln.split("TIMEOUT", 1)[1]) for ln in text.splitlines()
                                               if "TIMEOUT {" in ln)}
    assert set(errors) == {"teledora", "plain"}, text[-3000:]
    assert "timed out" in errors["teledora"] and "backtrace" not in errors["teledora"].lower()
    assert "backtrace" in errors["plain"].lower()
