"""Record a sim run under dora, replay it at speed 0, compare digests.

The sources (xr, sim, lift, base) are replayed with their recorded bytes
(``--stamps recorded``); teleop, ik and arms run live. What must hold:

* every replayed topic arrives complete and byte-equal, in recorded order;
* ``arms`` (a per-message transform of the replayed sim joint states)
  reproduces its recorded output for every state it processed in both runs.

teleop and ik read the wall clock and dora timers, so their outputs are not
byte-reproducible from a recording; the test checks only that they ran live.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from teledora.recording import MANIFEST_NAME, RunReader, value_digest

pytestmark = pytest.mark.dataflow

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
REPLAYED = ("xr", "sim", "lift", "base")
WANT = {"xr__controllers": 200, "sim__joint_states": 100, "arms__joint_states": 50}


def sim_dataflow_for_test(tmp: Path) -> Path:
    """dataflows/sim.yml with absolute node paths and roomy recorder queues."""
    src = REPO / "dataflows" / "sim.yml"
    if not src.exists():
        pytest.skip("dataflows/sim.yml is absent")
    flow = yaml.safe_load(src.read_text())
    for node in flow["nodes"]:
        path = node.get("path")
        if path and not os.path.isabs(path) and (src.parent / path).exists():
            node["path"] = str((src.parent / path).resolve())
        if str(node.get("path", "")).endswith("recorder.py"):
            for spec in node["inputs"].values():
                spec["queue_size"] = max(int(spec.get("queue_size", 0)), 10000)
    out = tmp / "sim_recorded.yml"
    out.write_text(yaml.safe_dump(flow, sort_keys=False))
    if (src.parent / "types").is_dir():
        (tmp / "types").symlink_to((src.parent / "types").resolve(), target_is_directory=True)
    return out


def counts(run: Path) -> dict[str, int]:
    try:
        topics = json.loads((run / MANIFEST_NAME).read_text()).get("topics", {})
    except (OSError, json.JSONDecodeError):
        return {}
    return {t: v["count"] for t, v in topics.items()}


@pytest.fixture(scope="module")
def recorded_and_replayed(tmp_path_factory) -> tuple[Path, Path, str]:
    tmp = tmp_path_factory.mktemp("determinism")
    flow = sim_dataflow_for_test(tmp)
    run = tmp / "recorded"
    env = dict(os.environ, MUJOCO_GL="egl", TELEDORA_RUN_DIR=str(run))
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.Popen([str(BIN / "dora"), "run", str(flow)], cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            have = counts(run)
            if all(have.get(t, 0) >= n for t, n in WANT.items()):
                break
            time.sleep(0.5)
        proc.send_signal(signal.SIGINT)  # like Ctrl-C: dora stops the nodes, the recorder closes the run
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if not all(counts(run).get(t, 0) >= n for t, n in WANT.items()):
        pytest.fail(f"the sim run recorded too little: {counts(run)}")
    cmd = [str(BIN / "teledora"), "replay", str(run), "--replace", ",".join(REPLAYED), "--speed", "0", "--stamps", "recorded", "--runs-dir", str(tmp / "replays")]
    out = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, (out.stdout + out.stderr)[-4000:]
    match = re.search(r"recording of the replay in (\S+)", out.stdout)
    assert match, out.stdout[-3000:]
    return run, Path(match.group(1)), out.stdout


def digests(reader: RunReader, topic: str) -> list[str]:
    return [value_digest(m.value) for m in reader.iter_topic(topic)]


def test_replayed_topics_are_complete_and_byte_equal(recorded_and_replayed):
    run, replay, _ = recorded_and_replayed
    original, again = RunReader(run), RunReader(replay)
    assert again.complete and again.manifest["replay_of"] == str(run.resolve())
    replayed = [t for t in original.topics if t.split("__")[0] in REPLAYED]
    assert {"xr__controllers", "sim__joint_states", "lift__state", "base__odom"} <= set(replayed)
    for topic in replayed:
        assert digests(again, topic) == digests(original, topic), topic


def test_live_arms_node_reproduces_its_recorded_outputs(recorded_and_replayed):
    run, replay, _ = recorded_and_replayed
    def by_stamp(reader):
        return {m.stamp_ns: value_digest(m.value) for m in reader.iter_topic("arms__joint_states")}
    recorded, replayed = by_stamp(RunReader(run)), by_stamp(RunReader(replay))
    common = sorted(set(recorded) & set(replayed))
    assert common, "arms processed none of the states it processed in the recording"
    assert [recorded[s] for s in common] == [replayed[s] for s in common]


def test_live_nodes_ran_and_progress_was_reported(recorded_and_replayed):
    _, replay, stdout = recorded_and_replayed
    have = counts(replay)
    assert have.get("teleop__arm_targets", 0) > 0 and have.get("ik__joint_commands", 0) > 0
    for node in REPLAYED:
        assert f"replay {node} done:" in stdout
