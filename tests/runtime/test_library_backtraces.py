"""Rust library backtraces default to off in every node and every `dora run` teledora starts."""

from __future__ import annotations

import os
import sys
import types

from teledora.commands.demo import dora_environment
from teledora.runtime import node_io
from teledora.runtime.library_backtraces import LIBRARY_BACKTRACE_ENV, without_library_backtraces


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
