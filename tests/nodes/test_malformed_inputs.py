"""Every node of the sim dataflow, fed malformed messages on every input: none
is used silently and none crashes the node.

The inputs and their message kinds come from ``dataflows/sim.yml``'s
``input_types``; the malformed messages are built from the contract (a sound
message of the kind, then one field broken at a time: a value of 1e300, a
stamp 1000 s ahead or negative, a value of the wrong Arrow type, for joint
data an unknown joint and a 200,000-joint list, for scans no rays at all).
Each goes to the node in a batch of its own, under dora's MockNode, and the
node's last ``diagnostics`` must count every one of them as rejected (and
report a level above ``ok``). The hardware variants decode through the same
runtime call and are covered by their own node tests.
"""

from __future__ import annotations

import importlib
import json
import shlex
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pytest
import yaml
from dora.testing import MockNode

from teledora import models
from teledora.fakes.stepped_node import FakeClock, SteppedNode
from teledora.operators.contract.messages import KINDS, decode, encode

REPO = Path(__file__).resolve().parents[2]
PROFILE = models.load_profile()
ARM = list(PROFILE.arm_joint_names)
SIM_FLOW = yaml.safe_load((REPO / "dataflows" / "sim.yml").read_text())
# Nodes left out, and why: the recorder stores whatever arrives (its own
# tests cover what it refuses); the renderer, with no display and
# ``--cameras none`` as here, ends at start without reading an input (its own
# tests feed it malformed states with a window).
SKIPPED_NODES = {"recorder", "renderer"}
SKIPPED_INPUTS = {("xr", "cameras_ready")}  # only its arrival matters: the script waits for the cameras


def _sound(kind: str, now_ns: int) -> dict[str, Any]:
    """A message of ``kind`` that passes the contract and the message limits."""
    special: dict[str, dict[str, Any]] = {
        "JointState": dict(names=ARM, position=[0.1] * len(ARM), velocity=[0.0] * len(ARM), effort=[0.0] * len(ARM)),
        "JointCommands": dict(names=ARM, q_ref=[0.1] * len(ARM), dq_ref=[0.0] * len(ARM), status="ok"),
        "LiftState": dict(height_m=0.1, velocity_m_s=0.0, homed=True),
        "LaserScan": dict(frame_id="laser", angle_min=-3.0, angle_max=3.0, angle_increment=0.5, time_increment=1e-4,
                          scan_time=0.1, range_min=0.15, range_max=12.0, ranges=[1.0] * 13, intensities=[]),
        "GroundTruth": dict(frame_id="world", x=0.0, y=0.0, yaw=0.0, vx=0.0, vy=0.0, wz=0.0, lift_height_m=0.1,
                            joint_names=ARM, joint_position=[0.1] * len(ARM), joint_velocity=[0.0] * len(ARM)),
        "OpticalFlow": dict(frame_id="flow", flow_rate_x=0.0, flow_rate_y=0.0, quality=200, ground_distance_m=0.05,
                            integration_time_s=0.02),
        "ObjectPoses": dict(frame_id="world", names=["cube"], x=[0.5], y=[0.0], z=[0.8], qx=[0.0], qy=[0.0], qz=[0.0], qw=[1.0]),
        "TeleopState": dict(estop_latched=False, release_armed=False, arms_paused=True, left_clutched=False, right_clutched=False,
                            left_slow=False, right_slow=False, left_pinch="full", right_pinch="full", reset_count=0, events=[]),
        "RecorderStatus": dict(recording=True, messages=1, lag_ns=0),
    }
    msg: dict[str, Any] = {"stamp_ns": now_ns}
    for f in KINDS[kind]:
        if f.name in msg:
            continue
        if f.name in special.get(kind, {}):
            msg[f.name] = special[kind][f.name]
        elif f.name in ("left", "right") and kind == "XrControllers":
            msg[f.name] = dict(connected=True, epoch=1, pose_valid=True, position=[0.3, 0.2, 1.0], orientation=[0, 0, 0, 1.0],
                               trigger=0.0, squeeze=0.0, stick=[0.0, 0.0], primary=False, secondary=False, stick_click=False,
                               menu=False, pose_stamp_ns=now_ns, input_stamp_ns=now_ns)
        elif f.name in ("left", "right") and kind == "ArmTargets":
            msg[f.name] = dict(enabled=False, position=[0.3, 0.2, 0.8], orientation=[0, 0, 0, 1.0], gripper=0.0, slow=False)
        elif f.name == "frame_id":
            msg[f.name] = {"Odometry": "odom", "ArmTargets": "base_link"}.get(kind, "base_link")
        elif f.name == "child_frame_id":
            msg[f.name] = "base_link"
        elif f.length:
            msg[f.name] = [0.0, 0.0, 0.0, 1.0] if f.quaternion else [0.0] * f.length
        else:
            msg[f.name] = {pa.float64(): 0.0, pa.int64(): 0, pa.int32(): 0, pa.int16(): 0, pa.bool_(): False,
                           pa.string(): "x"}.get(f.type, [])
    return msg


def _first_float_path(kind: str) -> tuple[str, ...] | None:
    """The first plain float field a message of ``kind`` has (nested in a hand or arm if need be)."""
    for f in KINDS[kind]:
        if f.type == pa.float64():
            return (f.name,)
    for f in KINDS[kind]:
        if f.name in ("left", "right"):
            return (f.name, "position")
    for f in KINDS[kind]:
        if pa.types.is_list(f.type) and pa.types.is_floating(f.type.value_type):
            return (f.name,)
    return None


def _with(msg: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = json.loads(json.dumps(msg))
    target = out
    for key in path[:-1]:
        target = target[key]
    old = target[path[-1]]
    target[path[-1]] = [value] * len(old) if isinstance(old, list) else value
    return out


def malformed(kind: str, now_ns: int) -> Iterator[tuple[str, Any]]:
    """(what is wrong, value) pairs for one input of ``kind``."""
    sound = _sound(kind, now_ns)
    decode(kind, encode(kind, sound))  # the base message itself is sound
    path = _first_float_path(kind)
    if path is not None:
        yield "1e300", encode(kind, _with(sound, path, 1e300))
    else:  # a kind of flags and counters: a negative count
        count = next(f.name for f in KINDS[kind] if f.type == pa.int64() and f.name != "stamp_ns")
        yield f"{count} -1", encode(kind, dict(sound, **{count: -1}))
    yield "stamp 1000 s ahead", encode(kind, dict(sound, stamp_ns=now_ns + 1000 * 10**9))
    yield "negative stamp", encode(kind, dict(sound, stamp_ns=-1))
    yield "wrong Arrow type", pa.array([1, 2, 3])
    yield "null message", pa.array([None], type=encode(kind, sound).type)
    if kind == "JointState":
        yield "unknown joint", encode(kind, dict(sound, names=ARM[:-1] + ["tail"]))
        many = [f"joint_{i}" for i in range(200_000)]
        yield "200,000 joints", encode(kind, dict(sound, names=many, position=[0.0] * len(many), velocity=[], effort=[]))
    if kind == "LaserScan":
        yield "no rays", encode(kind, dict(sound, ranges=[], intensities=[]))


def _module(node: dict[str, Any]) -> str:
    return "teledora.nodes." + Path(node["path"]).with_suffix("").as_posix().split("nodes/", 1)[1].replace("/", ".")


def _cases() -> Iterator[Any]:
    for node in SIM_FLOW["nodes"]:
        if node["id"] in SKIPPED_NODES:
            continue
        for input_id, type_name in (node.get("input_types") or {}).items():
            kind = type_name.rsplit("/", 1)[-1]
            if kind in KINDS and (node["id"], input_id) not in SKIPPED_INPUTS:
                yield pytest.param(node, input_id, kind, id=f"{node['id']}.{input_id}")


@pytest.mark.parametrize("node, input_id, kind", list(_cases()))
def test_no_malformed_input_is_used_silently_or_crashes_the_node(node, input_id, kind, monkeypatch, tmp_path):
    for key, value in (node.get("env") or {}).items():
        if key != "TELEDORA_BATCH_SPACING_S":  # spacing sleeps between batches: nothing to test here
            monkeypatch.setenv(key, str(value))
    monkeypatch.setenv("TELEDORA_ENDS_WITH", input_id)
    # the node's inputs as dora describes them to it (which are data inputs, which the recorder's heartbeat)
    monkeypatch.setenv("DORA_NODE_CONFIG", yaml.safe_dump({"run_config": {"inputs": node["inputs"]}}))
    stepped = True
    if node["id"] == "xr":  # the scripted operator waits for the robot before it plays: test the wait on its own
        monkeypatch.setenv("TELEDORA_XR_WAIT_FOR", input_id if input_id == "robot_ready" else "")
        monkeypatch.setenv("TELEDORA_SIM_SPEED", "1000")  # then plays its script in a blink, polling its inputs
        stepped = input_id == "robot_ready"  # its poll takes whatever is queued
    monkeypatch.setenv("TELEDORA_RUN_DIR", str(tmp_path / "run"))
    monkeypatch.setenv("MUJOCO_GL", "egl")
    argv = shlex.split(str(node.get("args") or ""))
    if "--port" in argv:
        argv[argv.index("--port") + 1] = "0"
    bad = list(malformed(kind, time.time_ns()))
    script = [(input_id, value, 0.0) for _, value in bad]
    mock = SteppedNode(script, FakeClock()) if stepped else MockNode([(i, v) for i, v, _ in script])
    importlib.import_module(_module(node)).main(argv, node=mock)  # a crash fails the test here
    diagnostics = mock.outputs.get("diagnostics", [])
    assert diagnostics, "the node published no diagnostics"
    last = decode("Diagnostics", diagnostics[-1])
    assert last["rejected"] == len(bad), (
        f"{last['rejected']} of {len(bad)} malformed {kind} messages rejected ({[w for w, _ in bad]}); "
        f"last error: {last['last_error']}")
    levels = [decode("Diagnostics", d)["level"] for d in diagnostics]
    assert any(level != "ok" for level in levels)
    by_reason = json.loads(last["details_json"]).get("rejected_by_reason", {})
    assert sum(by_reason.values()) == len(bad), by_reason
    np.testing.assert_equal(sorted(by_reason), sorted(set(by_reason)))
