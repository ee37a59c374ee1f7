"""lower_priority: every thread of the process, the ones already running
(dora's, pyarrow's) and the ones started afterwards; checked in a separate
process (a lowered priority cannot be raised back without privileges) and
under dora, where the node library's threads exist before the node lowers it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from teledora.runtime.cpu_priority import NICE_MAX, lower_priority, thread_nice_values

BIN = Path(sys.executable).parent


def test_rejects_a_raise_and_leaves_zero_steps_alone():
    before = thread_nice_values()
    with pytest.raises(ValueError, match="-1"):
        lower_priority(-1)
    assert lower_priority(0) == os.nice(0)
    assert thread_nice_values() == before


def test_every_thread_is_lowered_those_running_before_and_those_started_after():
    code = """
import os, threading
from teledora.runtime.cpu_priority import lower_priority, thread_nice_values
started, go, seen = threading.Event(), threading.Event(), []
def early():
    started.set(); go.wait()
    seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
t = threading.Thread(target=early); t.start(); started.wait()
base = os.nice(0)
now = lower_priority(4)
go.set(); t.join()
late = threading.Thread(target=lambda: seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
late.start(); late.join()
print(base, now, *seen, *thread_nice_values().values())
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    base, now, early, late, *all_threads = map(int, out.stdout.split())
    assert now == min(base + 4, NICE_MAX)
    assert early == late == now
    assert set(all_threads) == {now}


def test_a_thread_already_lower_stays_lower():
    code = """
import os, threading
from teledora.runtime.cpu_priority import lower_priority
started, go, seen = threading.Event(), threading.Event(), []
def low():
    os.nice(10); started.set(); go.wait()
    seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
t = threading.Thread(target=low); t.start(); started.wait()
base = os.nice(0)
lower_priority(2)
go.set(); t.join()
print(base, seen[0])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    base, low = map(int, out.stdout.split())
    assert low == min(base + 10, NICE_MAX)


NODE = """
import json, os, sys
from teledora.runtime.cpu_priority import lower_priority, thread_nice_values
from teledora.runtime.node_io import make_node
node = make_node()
before = thread_nice_values()
if sys.argv[1] != "0":
    lower_priority(int(sys.argv[1]))
print("NICE", json.dumps({"steps": sys.argv[1], "before": list(before.values()),
                          "after": list(thread_nice_values().values())}), flush=True)
for event in node:
    if event["type"] == "INPUT":
        break
"""


@pytest.mark.dataflow
def test_under_dora_the_node_librarys_threads_are_lowered_too(tmp_path):
    (tmp_path / "node.py").write_text(NODE)
    flow = {"nodes": [
        {"id": "yielding", "path": "node.py", "args": "5", "inputs": {"tick": "dora/timer/millis/50"}},
        {"id": "control", "path": "node.py", "args": "0", "inputs": {"tick": "dora/timer/millis/50"}},
    ]}
    (tmp_path / "flow.yml").write_text(yaml.safe_dump(flow))
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    out = subprocess.run([str(BIN / "dora"), "run", "flow.yml"], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    reports = {r["steps"]: r for r in (json.loads(ln.split("NICE", 1)[1]) for ln in text.splitlines() if "NICE {" in ln)}
    assert set(reports) == {"0", "5"}, text[-3000:]
    base = os.nice(0)
    # dora's node library had started its threads before the node lowered itself
    assert len(reports["5"]["before"]) > 1 and set(reports["5"]["before"]) == {base}
    assert set(reports["5"]["after"]) == {min(base + 5, NICE_MAX)}
    assert set(reports["0"]["after"]) == {base}
